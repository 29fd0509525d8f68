//! llama.cpp RPC lowering: the client drives each `rpc-server` stage with blocking calls.

use crate::llm::{Op, OpClass};

use super::network::Builder;
use super::plan::us_to_ns;

/// llama.cpp RPC: node 0 is the client and computes the first layers; each further stage is an
/// `rpc-server` driven by blocking calls from the client: SET_TENSOR (activation in),
/// GRAPH_COMPUTE (graph serialized, deserialized and run), GET_TENSOR (activation back).
pub(super) fn lower_rpc(b: &mut Builder<'_>, tokens: u64) {
    let plan = b.plan;
    let n = plan.n();
    let model = &plan.model;
    let c = plan.comm.clone();
    let act_bytes = tokens * model.hidden * 4; // f32 activations in ggml
    let half_call = us_to_ns(c.rpc_call_us / 2.0);
    let stage_ops = |i: usize| {
        let share = &plan.shares[i];
        let mut ops: Vec<Op> =
            (share.first_layer..share.end_layer).flat_map(|l| plan.layer_ops(l)).filter(|o| o.class != OpClass::AllSum).collect();
        if share.head {
            ops.extend(plan.head_ops());
        }
        ops
    };
    let mut prev = b.gpu(0, stage_ops(0), false, &[]);
    for i in 1..n {
        let ops = stage_ops(i);
        let graph_nodes: u64 = ops.iter().map(|o| o.kernels as u64).sum();
        // SET_TENSOR: client -> server i, then the server's reply.
        let c1 = b.cpu(0, half_call, "rpc set_tensor", &[prev]);
        let x1 = b.send(0, i, act_bytes, &[c1]);
        let s1 = b.cpu(i, half_call, "rpc set_tensor", &[x1]);
        let r1 = b.send(i, 0, 8, &[s1]);
        // GRAPH_COMPUTE: the whole graph is serialized every call and rebuilt by the server.
        let c2 = b.cpu(0, half_call, "rpc graph_compute", &[r1]);
        let gbytes = (graph_nodes as f64 * c.rpc_graph_node_bytes).round() as u64;
        let x2 = b.send(0, i, gbytes, &[c2]);
        let s2 = b.cpu(i, half_call + us_to_ns(graph_nodes as f64 * c.rpc_graph_node_us), "rpc deserialize", &[x2]);
        let g = b.gpu(i, ops, false, &[s2]);
        let r2 = b.send(i, 0, 8, &[g]);
        // GET_TENSOR: request, activation back.
        let c3 = b.cpu(0, half_call, "rpc get_tensor", &[r2]);
        let x3 = b.send(0, i, 64, &[c3]);
        let s3 = b.cpu(i, half_call, "rpc get_tensor", &[x3]);
        prev = b.send(i, 0, act_bytes, &[s3]);
    }
    b.host(0, &[prev]);
}
