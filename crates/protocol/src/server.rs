//! `serve`: any in-process `Backend` as a protocol server; `serve_levels`: one server for
//! devices at several feature levels (announced in `hello`, chosen by each `compile`).
//! `Server::handle` answers one frame, for servers that need to do more around it.

use crate::PROTOCOL_VERSION;
use crate::descriptor::from_json;
use crate::frame::{Frame, FrameError, read_frame, write_frame};
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
    compiled: HashMap<u64, Box<dyn CompiledOperator + 'a>>,
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
                        self.compiled.insert(id, operator);
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
                let operator = id.and_then(|id| self.compiled.get(&id));
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
        let frame = match read_frame(&mut reader) {
            Ok(Some(frame)) => frame,
            Ok(None) => return Ok(()),
            Err(FrameError::BadHeader(message)) => {
                write_frame(
                    &mut writer,
                    &json!({"type": "error", "message": message}),
                    &[],
                )?;
                continue;
            }
            Err(FrameError::Malformed(message)) => {
                let _ = write_frame(
                    &mut writer,
                    &json!({"type": "error", "message": message}),
                    &[],
                );
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
