//! `dmlcts-cpu-server` checks the payload sizes an `execute` declares against its operator's
//! descriptor before it reads a byte of them: a declared 2 GiB input is refused at once with
//! the sizes named, not read (or waited for) into memory.

use dmlcts_protocol::frame::{Frame, read_frame, write_frame};
use serde_json::json;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

#[test]
fn an_execute_declaring_2_gib_is_refused_before_the_server_reads_it() {
    let mut server = Command::new(env!("CARGO_BIN_EXE_dmlcts-cpu-server"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let mut stdin = server.stdin.take().expect("piped");
    let mut stdout = server.stdout.take().expect("piped");
    let (sender, replies) = channel::<Frame>();
    std::thread::spawn(move || {
        while let Ok(Some(frame)) = read_frame(&mut stdout) {
            if sender.send(frame).is_err() {
                return;
            }
        }
    });
    let operator = json!({"split": {"axis": 2,
        "input": {"data_type": "FLOAT32", "sizes": [1, 1, 6, 2], "strides": null,
                  "total_tensor_size_in_bytes": 48},
        "outputs": [{"data_type": "FLOAT32", "sizes": [1, 1, 2, 2], "strides": null,
                     "total_tensor_size_in_bytes": 16},
                    {"data_type": "FLOAT32", "sizes": [1, 1, 4, 2], "strides": null,
                     "total_tensor_size_in_bytes": 32}]}});
    write_frame(&mut stdin, &json!({"type": "hello", "protocol": 1}), &[]).unwrap();
    write_frame(
        &mut stdin,
        &json!({"type": "compile", "id": 1, "operator": operator}),
        &[],
    )
    .unwrap();
    // The head of an execute whose input is declared as 2 GiB; none of it is sent.
    let header =
        br#"{"type":"execute","id":1,"inputs":1,"outputs":2,"payloads":[2147483648,16,32]}"#;
    stdin
        .write_all(&(header.len() as u32).to_le_bytes())
        .unwrap();
    stdin.write_all(header).unwrap();
    stdin.flush().unwrap();
    let reply = || replies.recv_timeout(Duration::from_secs(20));
    assert_eq!(reply().expect("hello").kind(), "hello");
    assert_eq!(reply().expect("accepted").kind(), "accepted");
    let refused = reply().expect("an error at once, without reading the payload");
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        refused.header,
        json!({"type": "error", "id": 1, "payloads": [], "message":
            "payload 0 declared as 2147483648 bytes; input 0 of operator 1 takes 48 \
             (its total_tensor_size_in_bytes)"})
    );
}
