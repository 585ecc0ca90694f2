//! A deliberately broken protocol server, for the harness's own tests. It serves the oracle
//! correctly except for one fault, chosen by its argument:
//!
//! - `crash-on-3`: exits with status 3 on the third compile request of its life;
//! - `abort-on-3`: aborts (SIGABRT on Unix) on the third compile request;
//! - `hang-on-join`: never answers an execute request of a Join;
//! - `short-output`: returns every output one byte short;
//! - `garbage`: answers execute requests with bytes that are not a frame.

use dmlcts_oracle::OracleBackend;
use dmlcts_protocol::frame::read_frame;
use dmlcts_protocol::{Server, write_reply};
use std::collections::HashSet;
use std::io::Write;

fn main() {
    let fault = std::env::args().nth(1).unwrap_or_default();
    eprintln!("broken server starting with fault `{fault}`");
    let backend = OracleBackend::default();
    let mut server = Server::new(&backend);
    let mut stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let mut compiles = 0;
    let mut joins = HashSet::new();
    while let Ok(Some(frame)) = read_frame(&mut stdin) {
        if frame.kind() == "compile" {
            compiles += 1;
            if compiles == 3 && fault == "crash-on-3" {
                eprintln!("crashing on purpose at compile #3");
                std::process::exit(3);
            }
            if compiles == 3 && fault == "abort-on-3" {
                eprintln!("aborting on purpose at compile #3");
                std::process::abort();
            }
            if frame.header["operator"].get("join").is_some() {
                joins.insert(frame.id());
            }
        }
        if frame.kind() == "execute" {
            if fault == "hang-on-join" && joins.contains(&frame.id()) {
                eprintln!("hanging on purpose");
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                }
            }
            if fault == "garbage" {
                let _ = stdout.write_all(b"\xff\xff\xff\x7fthis is not a frame");
                let _ = stdout.flush();
                continue;
            }
        }
        let Some(mut reply) = server.handle(&frame) else {
            continue;
        };
        if fault == "short-output" && frame.kind() == "execute" {
            for payload in &mut reply.payloads {
                payload.pop();
            }
        }
        if write_reply(&mut stdout, &reply).is_err() || frame.kind() == "shutdown" {
            return;
        }
    }
}
