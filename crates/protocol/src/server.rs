//! `serve`: any in-process `Backend` as a protocol server; `serve_levels`: one server for
//! devices at several feature levels (announced in `hello`, chosen by each `compile`).
//! `Server::handle` answers one frame, for servers that need to do more around it;
//! `Server::check_payloads` says, before any payload byte is read, whether a frame's declared
//! payloads are the ones its request takes (an `execute`: exactly its operator's tensor sizes;
//! anything else: none).

use crate::PROTOCOL_VERSION;
use crate::descriptor::from_json;
use crate::frame::{Frame, FrameError, Head, read_head, write_frame};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OutputBinding, ValidationProfile,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{self, Read, Write};

/// A backend's protocol state: the operators compiled so far, by id.
pub struct Server<'a> {
    backend: &'a dyn Backend,
    /// Devices a `compile` may ask for by level; empty: `backend` only.
    at_levels: Vec<&'a dyn Backend>,
    compiled: HashMap<u64, Compiled<'a>>,
}

/// A compiled operator and the byte sizes of the payloads its `execute` takes: its inputs'
/// then its outputs' `total_tensor_size_in_bytes`.
struct Compiled<'a> {
    operator: Box<dyn CompiledOperator + 'a>,
    inputs: Vec<u64>,
    outputs: Vec<u64>,
}

impl<'a> Server<'a> {
    pub fn new(backend: &'a dyn Backend) -> Server<'a> {
        Server::with_levels(backend, Vec::new())
    }

    /// `backend` answers a `compile` without a level; `at_levels` (each at its own
    /// `feature_level()`) those with one, and their levels are announced in `hello`.
    pub fn with_levels(backend: &'a dyn Backend, at_levels: Vec<&'a dyn Backend>) -> Server<'a> {
        Server {
            backend,
            at_levels,
            compiled: HashMap::new(),
        }
    }

    /// The device a `compile` asks for with its `feature_level` (none: the default one).
    fn device_for(&self, frame: &Frame) -> Result<&'a dyn Backend, String> {
        let Some(level) = frame.header.get("feature_level") else {
            return Ok(self.backend);
        };
        let offered: Vec<String> = self
            .at_levels
            .iter()
            .map(|b| b.feature_level().to_string())
            .collect();
        let text = level
            .as_str()
            .map_or_else(|| level.to_string(), str::to_string);
        FeatureLevel::parse(&text)
            .and_then(|level| {
                self.at_levels
                    .iter()
                    .copied()
                    .find(|b| b.feature_level() == level)
            })
            .ok_or_else(|| {
                format!(
                    "compile asks for feature level {text}; this server offers {}",
                    if offered.is_empty() {
                        "no choice of level".to_string()
                    } else {
                        offered.join(", ")
                    }
                )
            })
    }

    /// Whether the payloads a frame declares are the ones its request takes: for an
    /// `execute`, exactly its operator's inputs then outputs, each its descriptor's
    /// `total_tensor_size_in_bytes`; for anything else, none. The reason is the `error`
    /// reply's message.
    pub fn check_payloads(&self, head: &Head) -> Result<(), String> {
        let kind = head.kind();
        if kind != "execute" {
            return match head.lengths.len() {
                0 => Ok(()),
                n => Err(format!(
                    "`{}` takes no payloads; {n} declared",
                    crate::bounds::bounded(kind, 64)
                )),
            };
        }
        let id = head.header.get("id").and_then(Value::as_u64);
        let Some(compiled) = id.and_then(|id| self.compiled.get(&id)) else {
            return Err(format!("no compiled operator with id {id:?}"));
        };
        let id = id.unwrap_or_default();
        let expected = compiled.inputs.iter().chain(&compiled.outputs);
        if head.lengths.len() != compiled.inputs.len() + compiled.outputs.len() {
            return Err(format!(
                "{} payloads declared; operator {id} takes {} ({} inputs, then {} outputs)",
                head.lengths.len(),
                compiled.inputs.len() + compiled.outputs.len(),
                compiled.inputs.len(),
                compiled.outputs.len()
            ));
        }
        for (i, (&declared, &size)) in head.lengths.iter().zip(expected).enumerate() {
            if declared != size {
                let (what, k) = match i.checked_sub(compiled.inputs.len()) {
                    None => ("input", i),
                    Some(k) => ("output", k),
                };
                return Err(format!(
                    "payload {i} declared as {declared} bytes; {what} {k} of operator {id} \
                     takes {size} (its total_tensor_size_in_bytes)"
                ));
            }
        }
        Ok(())
    }

    /// The reply to one request (None for `release`, which has no reply).
    pub fn handle(&mut self, frame: &Frame) -> Option<Frame> {
        let id = frame.id();
        let error =
            |message: String| Frame::new(json!({"type": "error", "id": id, "message": message}));
        let backend = self.backend;
        Some(match frame.kind() {
            "hello" => {
                let mut hello = json!({
                    "type": "hello",
                    "protocol": PROTOCOL_VERSION,
                    "name": backend.name(),
                    "feature_level": backend.feature_level().to_string(),
                    "data_types": backend.data_types().iter().map(|d| d.name()).collect::<Vec<_>>(),
                    "device": backend.device(),
                });
                let implementation = backend.implementation();
                if !implementation.is_empty() {
                    hello["implementation"] = crate::process::implementation_json(&implementation);
                }
                match backend.validation_profile() {
                    ValidationProfile::Strict => {}
                    ValidationProfile::ValuesOnly => hello["profile"] = json!("values-only"),
                    ValidationProfile::NotEnforced(rules) => hello["not_enforced"] = json!(rules),
                }
                if !self.at_levels.is_empty() {
                    hello["feature_levels"] = self
                        .at_levels
                        .iter()
                        .map(|b| b.feature_level().to_string())
                        .collect();
                }
                Frame::new(hello)
            }
            "compile" => match (
                id,
                frame.header.get("operator").map(from_json),
                self.device_for(frame),
            ) {
                (None, _, _) => error("compile needs an \"id\"".to_string()),
                (_, None, _) => error("compile needs an \"operator\"".to_string()),
                (_, Some(Err(e)), _) | (_, _, Err(e)) => error(e),
                (Some(id), Some(Ok(op)), Ok(device)) => match device.compile(&op) {
                    Ok(operator) => {
                        let sizes = |tensors: Vec<(String, &dmlcts_tensor::TensorDesc)>| {
                            tensors
                                .iter()
                                .map(|(_, t)| t.total_tensor_size_in_bytes)
                                .collect()
                        };
                        let compiled = Compiled {
                            operator,
                            inputs: sizes(op.inputs()),
                            outputs: sizes(op.outputs()),
                        };
                        self.compiled.insert(id, compiled);
                        Frame::new(json!({"type": "accepted", "id": id}))
                    }
                    Err(CompileError::Rejected(r)) => Frame::new(
                        json!({"type": "rejected", "id": id, "reason": r.message, "rule": r.rule}),
                    ),
                    Err(CompileError::Failed(message)) => error(message),
                    Err(CompileError::Unsupported(reason)) => {
                        Frame::new(json!({"type": "unsupported", "id": id, "reason": reason}))
                    }
                },
            },
            "execute" => {
                let inputs = frame.header.get("inputs").and_then(Value::as_u64);
                let operator = id
                    .and_then(|id| self.compiled.get(&id))
                    .map(|c| &c.operator);
                match (operator, inputs) {
                    (None, _) => error(format!("no compiled operator with id {id:?}")),
                    (_, None) => error("execute needs \"inputs\" (a count)".to_string()),
                    (Some(_), Some(n)) if n as usize > frame.payloads.len() => error(format!(
                        "{n} inputs announced, {} payloads sent",
                        frame.payloads.len()
                    )),
                    (Some(operator), Some(n)) => {
                        let (inputs, outputs) = frame.payloads.split_at(n as usize);
                        let input_refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
                        let mut outputs: Vec<Vec<u8>> = outputs.to_vec();
                        let mut bindings: Vec<OutputBinding<'_>> = outputs
                            .iter_mut()
                            .map(|b| OutputBinding::whole(b))
                            .collect();
                        match operator.execute(&input_refs, &mut bindings) {
                            Ok(()) => {
                                drop(bindings);
                                Frame {
                                    header: json!({"type": "executed", "id": id}),
                                    payloads: outputs,
                                }
                            }
                            Err(message) => error(message),
                        }
                    }
                }
            }
            "release" => {
                if let Some(id) = id {
                    self.compiled.remove(&id);
                }
                return None;
            }
            "shutdown" => Frame::new(json!({"type": "bye"})),
            other => error(format!("unknown message type `{other}`")),
        })
    }
}

/// Writes a frame built by `Server::handle`.
pub fn write_reply(writer: &mut impl Write, reply: &Frame) -> io::Result<()> {
    let payloads: Vec<&[u8]> = reply.payloads.iter().map(Vec::as_slice).collect();
    write_frame(writer, &reply.header, &payloads)
}

/// Serves `backend` until `shutdown` or the end of `reader`. Unknown messages and bad
/// headers get an `error` reply; only a stream that is no longer framed ends the loop with
/// an error.
pub fn serve(backend: &dyn Backend, reader: impl Read, writer: impl Write) -> io::Result<()> {
    serve_levels(backend, Vec::new(), reader, writer)
}

/// `serve`, with devices at several levels: `at_levels` (see `Server::with_levels`).
pub fn serve_levels<'a>(
    backend: &'a dyn Backend,
    at_levels: Vec<&'a dyn Backend>,
    mut reader: impl Read,
    mut writer: impl Write,
) -> io::Result<()> {
    let mut server = Server::with_levels(backend, at_levels);
    loop {
        let head = match read_head(&mut reader) {
            Ok(Some(head)) => head,
            Ok(None) => return Ok(()),
            Err(FrameError::Malformed(message)) => {
                let _ = write_frame(
                    &mut writer,
                    &json!({"type": "error", "message": message}),
                    &[],
                );
                return Err(io::Error::new(io::ErrorKind::InvalidData, message));
            }
            Err(FrameError::BadHeader(message)) => {
                return Err(io::Error::new(io::ErrorKind::InvalidData, message));
            }
            Err(FrameError::Io(e)) => return Err(e),
        };
        // Payload sizes are checked before a byte of them is read: a refused frame's bytes
        // are skipped, never kept, and the stream stays in step.
        if let Err(message) = server.check_payloads(&head) {
            let id = head.header.get("id").and_then(Value::as_u64);
            write_frame(
                &mut writer,
                &json!({"type": "error", "id": id, "message": message}),
                &[],
            )?;
            head.skip_payloads(&mut reader)?;
            continue;
        }
        let frame = match head.read_payloads(&mut reader) {
            Ok(frame) => frame,
            Err(FrameError::BadHeader(message)) => {
                write_frame(
                    &mut writer,
                    &json!({"type": "error", "message": message}),
                    &[],
                )?;
                continue;
            }
            Err(FrameError::Malformed(message)) => {
                return Err(io::Error::new(io::ErrorKind::InvalidData, message));
            }
            Err(FrameError::Io(e)) => return Err(e),
        };
        if let Some(reply) = server.handle(&frame) {
            write_reply(&mut writer, &reply)?;
        }
        if frame.kind() == "shutdown" {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::read_frame;
    use dmlcts_oracle::OracleBackend;

    /// The oracle, saying what it runs as a DirectML on an adapter would.
    struct Reporting(OracleBackend);

    impl Backend for Reporting {
        fn name(&self) -> String {
            "reporting".to_string()
        }
        fn feature_level(&self) -> dmlcts_tensor::FeatureLevel {
            self.0.feature_level()
        }
        fn implementation(&self) -> dmlcts_tensor::Implementation {
            dmlcts_tensor::Implementation {
                name: "directml".to_string(),
                version: "1.15.4.0".to_string(),
                adapter: dmlcts_tensor::AdapterInfo {
                    name: "WARP".to_string(),
                    vendor: "microsoft".to_string(),
                    driver: String::new(),
                },
            }
        }
        fn compile(
            &self,
            op: &dmlcts_tensor::OperatorDesc,
        ) -> Result<Box<dyn dmlcts_tensor::CompiledOperator + '_>, dmlcts_tensor::CompileError>
        {
            self.0.compile(op)
        }
    }

    #[test]
    fn a_hello_carries_the_implementation_a_backend_reports_and_none_when_it_reports_none() {
        let hello = Frame::new(json!({"type": "hello", "protocol": PROTOCOL_VERSION}));
        let backend = Reporting(OracleBackend::new(dmlcts_tensor::FeatureLevel::L4_1));
        let reply = Server::new(&backend).handle(&hello).expect("a reply");
        assert_eq!(
            reply.header["implementation"],
            json!({"name": "directml", "version": "1.15.4.0",
                   "adapter": {"name": "WARP", "vendor": "microsoft"}})
        );
        let silent = OracleBackend::new(dmlcts_tensor::FeatureLevel::L4_1);
        let reply = Server::new(&silent).handle(&hello).expect("a reply");
        assert_eq!(reply.header.get("implementation"), None);
    }

    /// A Split of a 48-byte FLOAT32 input into 16 and 32 bytes, compiled as operator 1.
    fn compile_split() -> Vec<u8> {
        let operator = json!({"split": {"axis": 2,
            "input": {"data_type": "FLOAT32", "sizes": [1, 1, 6, 2], "strides": null,
                      "total_tensor_size_in_bytes": 48},
            "outputs": [{"data_type": "FLOAT32", "sizes": [1, 1, 2, 2], "strides": null,
                         "total_tensor_size_in_bytes": 16},
                        {"data_type": "FLOAT32", "sizes": [1, 1, 4, 2], "strides": null,
                         "total_tensor_size_in_bytes": 32}]}});
        let mut bytes = Vec::new();
        write_frame(
            &mut bytes,
            &json!({"type": "compile", "id": 1, "operator": operator}),
            &[],
        )
        .unwrap();
        bytes
    }

    /// The frame's bytes with its header as given and payloads of `lengths` zeros, each of
    /// the first `sent` of them sent.
    fn raw(header: &str, sent: &[usize]) -> Vec<u8> {
        let mut bytes = (header.len() as u32).to_le_bytes().to_vec();
        bytes.extend(header.as_bytes());
        for &n in sent {
            bytes.extend(vec![0u8; n]);
        }
        bytes
    }

    /// Serves `input`; the replies, and how serving ended.
    fn serve_bytes(input: &[u8]) -> (Vec<Frame>, io::Result<()>) {
        let mut output = Vec::new();
        let ended = serve(&OracleBackend::default(), input, &mut output);
        let mut replies = Vec::new();
        let mut reader = output.as_slice();
        while let Some(frame) = read_frame(&mut reader).unwrap() {
            replies.push(frame);
        }
        (replies, ended)
    }

    #[test]
    fn an_execute_declaring_2_gib_is_refused_before_a_byte_is_read() {
        let mut input = compile_split();
        input.extend(raw(
            r#"{"type":"execute","id":1,"inputs":1,"outputs":2,"payloads":[2147483648,16,32]}"#,
            &[],
        ));
        let (replies, ended) = serve_bytes(&input);
        assert_eq!(replies[0].kind(), "accepted");
        assert_eq!(
            replies[1].header,
            json!({"type": "error", "id": 1, "payloads": [], "message":
                "payload 0 declared as 2147483648 bytes; input 0 of operator 1 takes 48 \
                 (its total_tensor_size_in_bytes)"})
        );
        // The declared bytes never came: the stream ended inside the frame.
        assert_eq!(ended.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn wrong_payloads_are_refused_and_skipped_and_the_stream_stays_in_step() {
        let mut input = compile_split();
        // An output one byte long too many, sent whole: refused, skipped.
        input.extend(raw(
            r#"{"type":"execute","id":1,"inputs":1,"outputs":2,"payloads":[48,16,33]}"#,
            &[48, 16, 33],
        ));
        // A payload too few.
        input.extend(raw(
            r#"{"type":"execute","id":1,"inputs":1,"outputs":2,"payloads":[48,16]}"#,
            &[48, 16],
        ));
        // Payloads on a message that takes none, and on an unknown operator.
        input.extend(raw(r#"{"type":"hello","payloads":[4]}"#, &[4]));
        input.extend(raw(r#"{"type":"execute","id":9,"payloads":[4]}"#, &[4]));
        // Then a right one is served.
        input.extend(raw(
            r#"{"type":"execute","id":1,"inputs":1,"outputs":2,"payloads":[48,16,32]}"#,
            &[48, 16, 32],
        ));
        let (replies, ended) = serve_bytes(&input);
        ended.unwrap();
        let messages: Vec<&str> = replies[1..5]
            .iter()
            .map(|r| r.header["message"].as_str().unwrap())
            .collect();
        assert_eq!(
            messages,
            [
                "payload 2 declared as 33 bytes; output 1 of operator 1 takes 32 \
                 (its total_tensor_size_in_bytes)",
                "2 payloads declared; operator 1 takes 3 (1 inputs, then 2 outputs)",
                "`hello` takes no payloads; 1 declared",
                "no compiled operator with id Some(9)",
            ]
        );
        assert_eq!(replies[5].kind(), "executed");
        assert_eq!(
            replies[5].payloads.iter().map(Vec::len).collect::<Vec<_>>(),
            [16, 32]
        );
    }
}
