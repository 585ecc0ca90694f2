//! Planning one execution on the device: where the tensors live (`Placement`), which
//! pieces of the copy plan become the device's own buffer copies (`RunCopy`) and which
//! kernel pieces, and the kernel's dispatches over them (`Prepared`).

use crate::device::Gpu;
use crate::kernel::{KernelPiece, PIECE_WORDS, Specialization, kernel_piece};
use dmlcts_tensor::{OperatorDesc, copy_plan, merge_dimensions};
use std::collections::BTreeMap;
use wgpu::util::DeviceExt;

pub(crate) fn padded(bytes: u64) -> u64 {
    bytes.div_ceil(4).max(1) * 4
}

/// Where tensors live on the device: in one shared buffer when they fit under the binding
/// limit together (so one dispatch reaches all of them), else each in its own.
#[derive(Default)]
pub(crate) struct Placement {
    pub(crate) buffers: Vec<wgpu::Buffer>,
    pub(crate) sizes: Vec<u64>,
    /// Per tensor: its buffer and the byte where it starts there.
    pub(crate) places: Vec<(usize, u64)>,
}

/// Byte alignment of a tensor inside a shared buffer (a multiple of every element size).
const PLACE_ALIGN: u64 = 16;

/// Buffer sizes and per-tensor (buffer, offset) for tensors of `lengths` bytes.
fn arrange(lengths: &[u64], limit: u64) -> (Vec<u64>, Vec<(usize, u64)>) {
    let slot = |len: u64| padded(len).div_ceil(PLACE_ALIGN) * PLACE_ALIGN;
    let total: u64 = lengths.iter().map(|&l| slot(l)).sum();
    if total <= limit {
        let mut offset = 0;
        let places = lengths
            .iter()
            .map(|&l| {
                let place = (0, offset);
                offset += slot(l);
                place
            })
            .collect();
        (vec![total.max(4)], places)
    } else {
        let sizes = lengths.iter().map(|&l| slot(l)).collect();
        (sizes, (0..lengths.len()).map(|i| (i, 0)).collect())
    }
}

/// Buffers and bind groups for one execution.
pub(crate) struct Prepared {
    pub(crate) inputs: Placement,
    pub(crate) outputs: Placement,
    pub(crate) output_lengths: Vec<u64>,
    /// One per pair of (input buffer, output buffer) that kernel pieces connect: a single
    /// one when the tensors share buffers.
    pub(crate) dispatches: Vec<Dispatch>,
    pub(crate) copies: Vec<RunCopy>,
}

pub(crate) struct Dispatch {
    /// None for the bench's lane copy.
    pub(crate) specialization: Option<Specialization>,
    pub(crate) pipeline: wgpu::ComputePipeline,
    pub(crate) bind_group: wgpu::BindGroup,
    pub(crate) groups: (u32, u32, u32),
}

/// A contiguous, 4-byte-aligned run: done by the device's own buffer copy.
pub(crate) struct RunCopy {
    pub(crate) src_buffer: usize,
    pub(crate) dst_buffer: usize,
    pub(crate) src_byte: u64,
    pub(crate) dst_byte: u64,
    pub(crate) bytes: u64,
}

impl Gpu {
    fn place(&self, tensors: &[&[u8]], usage: wgpu::BufferUsages) -> Placement {
        let lengths: Vec<u64> = tensors.iter().map(|t| t.len() as u64).collect();
        let (sizes, places) = arrange(&lengths, self.shared_limit);
        let mut contents: Vec<Vec<u8>> = sizes.iter().map(|&s| vec![0u8; s as usize]).collect();
        for (tensor, &(buffer, offset)) in tensors.iter().zip(&places) {
            contents[buffer][offset as usize..][..tensor.len()].copy_from_slice(tensor);
        }
        let buffers = contents
            .iter()
            .map(|bytes| {
                self.device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: None,
                        contents: bytes,
                        usage,
                    })
            })
            .collect();
        Placement {
            buffers,
            sizes,
            places,
        }
    }

    /// Uploads inputs and outputs (`output_offsets[k]`: where output k's tensor starts in
    /// its buffer), and plans buffer copies and kernel dispatches (with `pipeline`).
    pub(crate) fn prepare(
        &self,
        op: &OperatorDesc,
        inputs: &[&[u8]],
        outputs: &[Vec<u8>],
        output_offsets: &[usize],
        moving: bool,
    ) -> Result<Prepared, String> {
        let element_bytes = op.outputs()[0].1.data_type.element_size() as u64;
        let input_placement = self.place(
            inputs,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        );
        let output_refs: Vec<&[u8]> = outputs.iter().map(Vec::as_slice).collect();
        let output_placement = self.place(
            &output_refs,
            wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
        );
        let (copies, kernel_pieces) = sort_pieces(
            op,
            element_bytes,
            output_offsets,
            &input_placement,
            &output_placement,
            moving,
        )?;
        let dispatches = self.dispatches(&kernel_pieces, &input_placement, &output_placement)?;
        Ok(Prepared {
            inputs: input_placement,
            outputs: output_placement,
            output_lengths: outputs.iter().map(|o| o.len() as u64).collect(),
            dispatches,
            copies,
        })
    }

    /// One dispatch per chunk of `kernel_pieces` that shares buffers and a specialization,
    /// each with its piece table and bind group.
    fn dispatches(
        &self,
        kernel_pieces: &KernelPieces,
        input_placement: &Placement,
        output_placement: &Placement,
    ) -> Result<Vec<Dispatch>, String> {
        let max_groups = u64::from(self.limits.max_compute_workgroups_per_dimension.max(1));
        let mut dispatches = Vec::new();
        // z: the piece; x and y: its workgroups, folded under the per-dimension limit.
        let groups: Vec<(usize, usize, Specialization, &[KernelPiece])> = kernel_pieces
            .iter()
            .flat_map(|(&(src, dst, specialization), pieces)| {
                pieces
                    .chunks(max_groups as usize)
                    .map(move |chunk| (src, dst, specialization, chunk))
            })
            .collect();
        for (src_buffer, dst_buffer, specialization, pieces) in groups {
            let mut table = Vec::with_capacity(pieces.len() * PIECE_WORDS);
            for piece in pieces {
                table.extend(piece.words()?);
            }
            let most = pieces.iter().map(|p| p.groups).max().unwrap_or(1);
            let x = most.clamp(1, max_groups);
            let y = most.div_ceil(x).max(1);
            if y > max_groups {
                return Err(format!(
                    "{most} workgroups are more than the adapter's {max_groups} x {max_groups}"
                ));
            }
            let table_bytes: Vec<u8> = table.iter().flat_map(|w| w.to_le_bytes()).collect();
            let table = self
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("dmlcts pieces"),
                    contents: &table_bytes,
                    usage: wgpu::BufferUsages::STORAGE,
                });
            let bind_group = self.bind_group(
                &input_placement.buffers[src_buffer],
                &output_placement.buffers[dst_buffer],
                &table,
            );
            dispatches.push(Dispatch {
                specialization: Some(specialization),
                pipeline: self.pipeline(specialization)?,
                bind_group,
                groups: (x as u32, y as u32, pieces.len() as u32),
            });
        }
        Ok(dispatches)
    }
}

/// Pieces that can share a dispatch: same buffers, same specialization.
type KernelPieces = BTreeMap<(usize, usize, Specialization), Vec<KernelPiece>>;

/// Sorts the pieces of `op`'s copy plan: contiguous, 4-byte-aligned runs become buffer
/// copies; every other piece a kernel piece, grouped by the dispatch that can run it.
fn sort_pieces(
    op: &OperatorDesc,
    element_bytes: u64,
    output_offsets: &[usize],
    input_placement: &Placement,
    output_placement: &Placement,
    moving: bool,
) -> Result<(Vec<RunCopy>, KernelPieces), String> {
    let mut copies = Vec::new();
    let mut kernel_pieces: KernelPieces = BTreeMap::new();
    let es = element_bytes as i64;
    for (k, output) in copy_plan(op).iter().enumerate() {
        let offset = output_offsets[k] as u64;
        if !offset.is_multiple_of(element_bytes) {
            return Err(format!(
                "output {k} is bound at byte {offset}, not a multiple of {element_bytes}"
            ));
        }
        let (dst_buffer, dst_place) = output_placement.places[k];
        for piece in &output.pieces {
            let dims = merge_dimensions(&piece.sizes, &piece.src_strides, &output.strides);
            let (src_buffer, src_place) = input_placement.places[piece.input];
            let src_byte = src_place + (piece.src_base * es) as u64;
            let dst_byte = dst_place + offset + (output.dst_base(piece) * es) as u64;
            if let [(n, 1, 1)] = dims.as_slice() {
                let bytes = n * element_bytes;
                if src_byte.is_multiple_of(4)
                    && dst_byte.is_multiple_of(4)
                    && bytes.is_multiple_of(4)
                {
                    copies.push(RunCopy {
                        src_buffer,
                        dst_buffer,
                        src_byte,
                        dst_byte,
                        bytes,
                    });
                    continue;
                }
            }
            let piece = kernel_piece(&dims, element_bytes, src_byte, dst_byte);
            let specialization = Specialization {
                mode: piece.mode,
                element_log2: element_bytes.trailing_zeros(),
                edges: piece.edges,
                outer: piece.outer.len() as u32,
                per_lane: piece.per_lane as u32,
                moving,
            };
            kernel_pieces
                .entry((src_buffer, dst_buffer, specialization))
                .or_default()
                .push(piece);
        }
    }
    Ok((copies, kernel_pieces))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_share_a_buffer_when_they_fit_together_else_each_has_its_own() {
        assert_eq!(
            arrange(&[5, 16, 1], 64),
            (vec![48], vec![(0, 0), (0, 16), (0, 32)])
        );
        assert_eq!(
            arrange(&[5, 16, 1], 47),
            (vec![16, 16, 16], vec![(0, 0), (1, 0), (2, 0)])
        );
    }
}
