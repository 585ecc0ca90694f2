//! The whole dmlcts corpus on the example backend, one libtest test per case, each case at its
//! own feature level: `cargo test --test dmlcts` (add `-- --list`, or a name filter such as
//! `-- doc.join`, as with any libtest target). The backend validates as a device at the level
//! it is made for, so `libtest_main_at_each_level` (a device reporting another level than the
//! one asked for fails its cases); a backend with one fixed level calls `libtest_main`.

use dmlcts_example_backend::ExampleBackend;

fn main() {
    dmlcts_harness::libtest_main_at_each_level(|level| Box::new(ExampleBackend::at_level(level)));
}
