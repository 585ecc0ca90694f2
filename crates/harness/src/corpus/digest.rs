//! Which corpus a run ran: a digest of the case files' bytes that were loaded (see
//! `sha256::corpus_digest`), so a report proves what it checked.

#[path = "sha256.rs"]
mod sha256;

pub use sha256::{hex, sha256};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_digest.rs"));
}

/// The digests of the files a corpus was loaded from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CorpusDigest {
    files: Vec<[u8; 32]>,
}

impl CorpusDigest {
    /// Records one file's bytes, as loaded.
    pub fn add(&mut self, bytes: &[u8]) {
        self.files.push(sha256(bytes));
    }

    /// Adds another corpus's files (a corpus extended by more files).
    pub fn extend(&mut self, other: &CorpusDigest) {
        self.files.extend_from_slice(&other.files);
    }

    /// How many files were loaded.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// `sha256:` and 64 hex digits.
    pub fn text(&self) -> String {
        format!("sha256:{}", sha256::corpus_digest(&self.files))
    }
}

/// The embedded corpus's digest (as `CorpusDigest::text` gives it), computed when this crate
/// was built; and its number of files.
pub fn embedded() -> (&'static str, usize) {
    (embedded::EMBEDDED_DIGEST, embedded::EMBEDDED_FILES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Corpus;

    #[test]
    fn sha256_gives_the_fips_180_4_test_vectors() {
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&sha256(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        // Lengths around the padding's edges (55, 56, 64 bytes).
        assert_eq!(
            hex(&sha256(&[b'a'; 55])),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"
        );
        assert_eq!(
            hex(&sha256(&[b'a'; 56])),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"
        );
        assert_eq!(
            hex(&sha256(&[b'a'; 64])),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"
        );
        let million = vec![b'a'; 1_000_000];
        assert_eq!(
            hex(&sha256(&million)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    #[test]
    fn the_digest_depends_on_the_bytes_not_on_order_and_matches_the_shell_recipe() {
        let mut a = CorpusDigest::default();
        a.add(b"one\n");
        a.add(b"two\n");
        let mut b = CorpusDigest::default();
        b.add(b"two\n");
        b.add(b"one\n");
        assert_eq!(a.text(), b.text());
        // (printf 'one\n' | sha256sum; printf 'two\n' | sha256sum) | cut -c1-64 | sort |
        // sha256sum
        assert_eq!(
            hex(&sha256(b"one\n")),
            "2c8b08da5ce60398e1f19af0e5dccc744df274b826abe585eaba68c525434806"
        );
        assert_eq!(
            a.text(),
            "sha256:173ca3ab6b78c67f78f35b1b1fa90f3a0897e2f9b572c6486a27bb8f21027b8e"
        );
        let mut c = CorpusDigest::default();
        c.add(b"one\n");
        c.add(b"two \n");
        assert_ne!(a.text(), c.text());
    }

    #[test]
    fn the_embedded_corpus_digest_of_the_build_is_the_loaded_corpus_s() {
        let corpus = Corpus::embedded();
        assert_eq!(
            embedded(),
            (corpus.digest.text().as_str(), corpus.digest.files())
        );
        assert_eq!(corpus.digest.files(), Corpus::embedded_files().len());
    }
}
