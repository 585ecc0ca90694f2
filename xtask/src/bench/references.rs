//! The reference copies: the machine's own copy of the bytes a workload moves (memcpy and
//! non-temporal stores, on one thread or over every core), between the backend's own buffers.

use dmlcts_backend_cpu::stream::{NONTEMPORAL_STORES, copy_nontemporal};
use dmlcts_tensor::{CompiledOperator, DataType, OutputBinding, fill_random_bits};
use std::cell::RefCell;

/// A reference copy of the same bytes: memcpy (`copy_from_slice`) or non-temporal stores, on
/// one thread or over every core in large disjoint parts (one per thread).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Reference {
    Memcpy,
    MemcpyParts,
    Stream,
    StreamParts,
}

impl Reference {
    /// The references this platform has (non-temporal ones only where `copy_nontemporal`
    /// really uses such stores).
    pub(super) fn available(threads: usize) -> Vec<Reference> {
        let mut all = vec![Reference::Memcpy];
        if threads > 1 {
            all.push(Reference::MemcpyParts);
        }
        if NONTEMPORAL_STORES {
            all.push(Reference::Stream);
            if threads > 1 {
                all.push(Reference::StreamParts);
            }
        }
        all
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Reference::Memcpy => "memcpy",
            Reference::MemcpyParts => "memcpy xN",
            Reference::Stream => "stream",
            Reference::StreamParts => "stream xN",
        }
    }

    /// Copies every (destination, source) pair of equal lengths, in order.
    fn run(self, pairs: Vec<(&mut [u8], &[u8])>, threads: usize) {
        self.run_and_read(pairs, Vec::new(), threads);
    }

    /// Copies every pair, in order, and reads every byte of `unread` (summing it): with the
    /// unread rest of a workload's inputs, a reference that moves every byte the workload
    /// must (a stride-2 slice writes half its input but reads every cache line of it). The
    /// parallel references give each thread its share of both.
    fn run_and_read(self, pairs: Vec<(&mut [u8], &[u8])>, unread: Vec<&[u8]>, threads: usize) {
        let memcpy: fn(&mut [u8], &[u8]) = |d, s| d.copy_from_slice(s);
        match self {
            Reference::Memcpy => copy_pairs_and_read(pairs, unread, memcpy),
            Reference::MemcpyParts => copy_in_parts(pairs, unread, threads, memcpy),
            Reference::Stream => copy_pairs_and_read(pairs, unread, copy_nontemporal),
            Reference::StreamParts => copy_in_parts(pairs, unread, threads, copy_nontemporal),
        }
    }

    /// The name of the reference that also reads the unread input.
    pub(super) fn reading_name(self) -> &'static str {
        match self {
            Reference::Memcpy => "memcpy+read",
            Reference::MemcpyParts => "memcpy+read xN",
            Reference::Stream => "stream+read",
            Reference::StreamParts => "stream+read xN",
        }
    }
}

/// A reference copy's source: random bytes like the backend's inputs (pages of one repeated
/// value may be merged or compressed by a hypervisor, which would make reads cheaper).
fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    fill_random_bits(DataType::Uint8, &mut bytes, seed);
    bytes
}

/// Buffers for the machine's own copy figures: a source and a target for each reference.
pub(super) fn reference_buffers(references: &[Reference], len: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..references.len())
        .map(|k| (random_bytes(len, 0x5eed + k as u64), vec![0u8; len]))
        .collect()
}

/// Each reference as a call that copies its source into its target.
pub(super) fn reference_copies<'a>(
    references: &[Reference],
    buffers: &'a mut [(Vec<u8>, Vec<u8>)],
    threads: usize,
) -> Vec<Box<dyn FnMut() + 'a>> {
    references
        .iter()
        .zip(buffers.iter_mut())
        .map(|(&reference, (source, target))| {
            Box::new(move || {
                reference.run(vec![(target.as_mut_slice(), source.as_slice())], threads);
                std::hint::black_box(&*target);
            }) as Box<dyn FnMut() + 'a>
        })
        .collect()
}

/// The backend's own buffers as (destination, source) pairs: every byte of the outputs in
/// order, from as many bytes of the inputs in order. The reference copies of a workload move
/// these, so they write the same memory the backend writes and read memory the backend
/// reads: on this VM the speed of a buffer depends on where it lies (one 256 MiB Join ran
/// at 0.78x its own copy in one process and 1.17x in the next, with copies of buffers of
/// their own), and buffers of their own made every ratio a draw of placements.
fn same_buffers<'a>(
    outputs: &'a mut [Vec<u8>],
    inputs: &'a [Vec<u8>],
) -> Vec<(&'a mut [u8], &'a [u8])> {
    let mut sources = inputs.iter().map(Vec::as_slice).filter(|s| !s.is_empty());
    let mut source: &[u8] = &[];
    let mut pairs = Vec::new();
    for output in outputs.iter_mut() {
        let mut rest = output.as_mut_slice();
        while !rest.is_empty() {
            if source.is_empty() {
                source = sources
                    .next()
                    .expect("bench workloads read at least the bytes they write");
            }
            let n = rest.len().min(source.len());
            let (to, after) = std::mem::take(&mut rest).split_at_mut(n);
            let (from, remaining) = source.split_at(n);
            pairs.push((to, from));
            rest = after;
            source = remaining;
        }
    }
    pairs
}

/// The input bytes `same_buffers` leaves unread when the outputs total `written` bytes: the
/// rest of the inputs, in order.
pub(super) fn unread_inputs(inputs: &[Vec<u8>], written: usize) -> Vec<&[u8]> {
    let mut skip = written;
    let mut unread = Vec::new();
    for input in inputs {
        let taken = skip.min(input.len());
        skip -= taken;
        if taken < input.len() {
            unread.push(&input[taken..]);
        }
    }
    unread
}

fn copy_pairs(pairs: Vec<(&mut [u8], &[u8])>, copy: fn(&mut [u8], &[u8])) {
    for (dst, src) in pairs {
        copy(dst, src);
    }
}

fn copy_pairs_and_read(
    pairs: Vec<(&mut [u8], &[u8])>,
    unread: Vec<&[u8]>,
    copy: fn(&mut [u8], &[u8]),
) {
    copy_pairs(pairs, copy);
    let sum = unread
        .iter()
        .fold(0u64, |sum, bytes| sum.wrapping_add(read_all(bytes)));
    std::hint::black_box(sum);
}

/// Reads every byte (a wrapping sum of 8-byte words, which vectorizes: faster than memory).
fn read_all(bytes: &[u8]) -> u64 {
    let (words, tail) = bytes.as_chunks::<8>();
    let sum = words
        .iter()
        .fold(0u64, |sum, w| sum.wrapping_add(u64::from_ne_bytes(*w)));
    tail.iter()
        .fold(sum, |sum, &b| sum.wrapping_add(u64::from(b)))
}

/// `slices` cut into `parts` runs of about equal bytes, in order (empty runs for missing
/// bytes).
fn cut_into_parts(slices: Vec<&[u8]>, parts: usize) -> Vec<Vec<&[u8]>> {
    let total: usize = slices.iter().map(|s| s.len()).sum();
    let share = total.div_ceil(parts).max(1);
    let mut groups: Vec<Vec<&[u8]>> = vec![Vec::new(); parts];
    let (mut group, mut room) = (0, share);
    for mut slice in slices {
        while !slice.is_empty() {
            if room == 0 {
                (group, room) = ((group + 1).min(parts - 1), share);
            }
            let (mine, rest) = slice.split_at(room.min(slice.len()));
            groups[group].push(mine);
            (slice, room) = (rest, room - mine.len());
        }
    }
    groups
}

/// `copy` over `parts` threads, each on one run of about equal bytes of the pairs, in order
/// (the caller's thread too), each then reading its share of `unread`.
fn copy_in_parts(
    pairs: Vec<(&mut [u8], &[u8])>,
    unread: Vec<&[u8]>,
    parts: usize,
    copy: fn(&mut [u8], &[u8]),
) {
    let total: usize = pairs.iter().map(|p| p.0.len()).sum();
    let share = total.div_ceil(parts).max(1);
    let mut groups: Vec<Vec<(&mut [u8], &[u8])>> = vec![Vec::new()];
    let mut room = share;
    for (mut dst, mut src) in pairs {
        while !dst.is_empty() {
            if room == 0 {
                groups.push(Vec::new());
                room = share;
            }
            let n = room.min(dst.len());
            let (d, d_rest) = std::mem::take(&mut dst).split_at_mut(n);
            let (s, s_rest) = src.split_at(n);
            groups.last_mut().expect("one group at least").push((d, s));
            (dst, src, room) = (d_rest, s_rest, room - n);
        }
    }
    groups.resize_with(parts.max(groups.len()), Vec::new);
    let reads = cut_into_parts(unread, groups.len());
    std::thread::scope(|scope| {
        let mut work = groups.into_iter().zip(reads);
        let first = work.next();
        for (group, read) in work {
            scope.spawn(move || copy_pairs_and_read(group, read, copy));
        }
        if let Some((group, read)) = first {
            copy_pairs_and_read(group, read, copy);
        }
    });
}

/// The backend's call (first), then each reference copy of the same bytes between the same
/// buffers (`same_buffers`), then, when the inputs hold bytes those copies leave unread,
/// each reference again reading them too (`Reference::run_and_read`), as calls for `rounds`.
pub(super) fn cpu_and_references<'a>(
    compiled: &'a dyn CompiledOperator,
    inputs: &'a [Vec<u8>],
    outputs: &'a RefCell<Vec<Vec<u8>>>,
    references: &[Reference],
    threads: usize,
) -> Vec<Box<dyn FnMut() + 'a>> {
    let input_refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut calls: Vec<Box<dyn FnMut() + 'a>> = vec![Box::new(move || {
        let mut outputs = outputs.borrow_mut();
        let mut bindings: Vec<OutputBinding<'_>> = outputs
            .iter_mut()
            .map(|b| OutputBinding::whole(b))
            .collect();
        compiled
            .execute(&input_refs, &mut bindings)
            .expect("executes");
    })];
    for &reference in references {
        calls.push(Box::new(move || {
            let mut outputs = outputs.borrow_mut();
            reference.run(same_buffers(&mut outputs, inputs), threads);
            std::hint::black_box(&*outputs);
        }));
    }
    let written: usize = outputs.borrow().iter().map(Vec::len).sum();
    if !unread_inputs(inputs, written).is_empty() {
        for &reference in references {
            calls.push(Box::new(move || {
                let mut outputs = outputs.borrow_mut();
                let pairs = same_buffers(&mut outputs, inputs);
                reference.run_and_read(pairs, unread_inputs(inputs, written), threads);
                std::hint::black_box(&*outputs);
            }));
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    #[test]
    fn same_buffers_pair_every_output_byte_with_the_inputs_in_order() {
        // Outputs of 5 and 7 bytes from inputs of 4, 0 and 10 bytes (3 left over).
        let inputs = vec![bytes(4, 1), Vec::new(), bytes(10, 2)];
        let mut outputs = vec![vec![0u8; 5], vec![0u8; 7]];
        let pairs = same_buffers(&mut outputs, &inputs);
        let lengths: Vec<usize> = pairs.iter().map(|p| p.0.len()).collect();
        assert_eq!(lengths, [4, 1, 7]);
        assert!(pairs.iter().all(|(d, s)| d.len() == s.len()));
        copy_pairs(pairs, |d, s| d.copy_from_slice(s));
        let flat: Vec<u8> = inputs.concat();
        assert_eq!(outputs.concat(), flat[..12]);
    }

    #[test]
    fn copies_in_parts_write_what_one_copy_writes() {
        let inputs = vec![bytes(1000, 3), bytes(333, 4), bytes(2048, 5)];
        let expected = inputs.concat();
        for parts in 1..=5 {
            for reference in [Reference::MemcpyParts, Reference::StreamParts] {
                let mut outputs = vec![vec![0u8; 2000], vec![0u8; 1381]];
                reference.run(same_buffers(&mut outputs, &inputs), parts);
                assert_eq!(outputs.concat(), expected, "{} parts", parts);
            }
        }
    }

    #[test]
    fn the_unread_input_is_what_the_copies_leave_and_every_part_reads_its_share() {
        let inputs = vec![bytes(5, 1), bytes(10, 2)];
        let unread = unread_inputs(&inputs, 8);
        assert_eq!(unread, [&inputs[1][3..]]);
        assert!(unread_inputs(&inputs, 15).is_empty());
        let (first, second) = (bytes(7, 3), bytes(4, 4));
        for parts in 1..=4 {
            let groups = cut_into_parts(vec![&first, &second], parts);
            assert_eq!(groups.len(), parts);
            let joined: Vec<u8> = groups.concat().concat();
            assert_eq!(
                joined,
                [first.clone(), second.clone()].concat(),
                "{parts} parts"
            );
        }
        // Bytes past the last whole word are summed one by one.
        assert_eq!(read_all(&[1, 2, 3]), 6);
        // The reading references copy what the plain ones do.
        for reference in [
            Reference::Memcpy,
            Reference::MemcpyParts,
            Reference::StreamParts,
        ] {
            let mut outputs = vec![vec![0u8; 8]];
            let pairs = same_buffers(&mut outputs, &inputs);
            reference.run_and_read(pairs, unread_inputs(&inputs, 8), 3);
            assert_eq!(outputs.concat(), inputs.concat()[..8]);
        }
    }
}
