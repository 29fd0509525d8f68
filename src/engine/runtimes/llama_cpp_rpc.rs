//! llama.cpp with `rpc-server` on the other nodes: a layer (pipeline) split whose client drives
//! each `rpc-server` stage with blocking calls; any mix of chips (each `rpc-server` is a ggml
//! device of its own backend: Metal, CUDA, Vulkan/ROCm).

use crate::hw::NodeSpec;
use crate::llm::{Op, OpClass};

use super::super::lower::lower_segments;
use super::super::lowered::Lowered;
use super::super::network::Builder;
use super::super::options::{EngineKind, EngineOptions, Parallelism, Runtime};
use super::super::plan::Plan;
use super::super::split::SplitError;
use super::llama_cpp::llama_server;
use super::{
    CABLE_FAILS_REQUESTS, CableLoss, EngineRuntime, LLAMA_CPP_DEFAULTS, RESTARTS, ServingLoop, VersionDefaults,
    client_crash_reloads_every_node,
};

/// llama.cpp RPC: node 0 is the client, the others `rpc-server`s.
pub struct LlamaCppRpc;

impl EngineRuntime for LlamaCppRpc {
    fn kind(&self) -> EngineKind {
        EngineKind::LlamaCppRpc
    }

    fn names(&self) -> &'static [&'static str] {
        &["llama-cpp-rpc"]
    }

    fn id(&self) -> &'static str {
        "llama-cpp-rpc"
    }

    fn label(&self) -> &'static str {
        "llama.cpp"
    }

    /// [`super::llama_cpp::llama_measurement_options`].
    fn measurement_options(&self, notes: &str) -> Vec<(&'static str, toml::Value)> {
        super::llama_cpp::llama_measurement_options(notes)
    }

    /// llama-server's `-np N` on the host that holds the RPC clients.
    fn concurrency_flags(&self) -> (&'static [&'static str], Option<u64>) {
        (super::llama_cpp::LLAMA_SERVER_SLOT_FLAGS, Some(super::llama_cpp::LLAMA_SERVER_SLOTS))
    }

    fn kernels(&self) -> Runtime {
        Runtime::LlamaCpp
    }

    fn version_defaults(&self) -> VersionDefaults {
        LLAMA_CPP_DEFAULTS
    }

    fn default_parallelism(&self, nodes: usize) -> Parallelism {
        if nodes > 1 { Parallelism::Pipeline } else { Parallelism::None }
    }

    /// RPC splits layers (pipeline), not tensors.
    fn check_split(&self, _engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
        match parallelism {
            Parallelism::Tensor
            | Parallelism::Expert
            | Parallelism::TensorPipeline { .. }
            | Parallelism::Data { .. }
            | Parallelism::DataExpert { .. } => Err(SplitError::RpcSplitsLayers),
            Parallelism::Pipeline | Parallelism::None => Ok(()),
        }
    }

    /// Any mix: each `rpc-server` is a ggml device of its own backend.
    fn mixes_chips(&self, _nodes: &[&NodeSpec]) -> bool {
        true
    }

    /// `rpc-server` and the client talk over TCP sockets only: GET_TENSOR, SET_TENSOR and
    /// GRAPH_COMPUTE are blocking TCP round trips (FACTS.md "llama.cpp RPC"; `--rpc
    /// host:port`); the backend has no RDMA transport.
    fn speaks_tcp_only(&self) -> bool {
        true
    }

    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered {
        match plan.options.parallelism {
            Parallelism::Pipeline => lower_rpc(plan, tokens),
            Parallelism::None
            | Parallelism::Tensor
            | Parallelism::Expert
            | Parallelism::TensorPipeline { .. }
            | Parallelism::Data { .. }
            | Parallelism::DataExpert { .. } => lower_segments(plan, tokens),
        }
    }

    /// `llama-server` as on one node; with RPC devices the micro-batches go through the stages
    /// one after another (the RPC lowering; ggml's pipeline overlap is off for RPC).
    fn serving_loop(&self, max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop {
        llama_server(max_batch, options.prefill_chunk)
    }

    /// A crash of the client reloads every node; of a server, only that server.
    fn crash_reloads_every_node(&self, _parallelism: Parallelism, node: usize) -> bool {
        client_crash_reloads_every_node(node)
    }

    /// An `rpc-server` holds no files: the client sends its tensors again over the network.
    fn reloads_over_network(&self, node: usize) -> bool {
        node > 0
    }

    fn crash_reaction(&self, _parallelism: Parallelism, node: usize) -> &'static str {
        if node > 0 { "llama.cpp fails the request and re-sends the server's tensors" } else { RESTARTS }
    }

    /// The client's graph runs every stage through its `rpc-server`'s socket, and the servers
    /// are fixed at start (`--rpc host:port,...`): a stage it cannot reach cannot run, so no
    /// request completes until the cable is back and the client has restarted.
    fn cable_loss(&self, _parallelism: Parallelism) -> CableLoss {
        CABLE_FAILS_REQUESTS
    }

    fn planner_splits(&self, nodes: usize) -> &'static [Parallelism] {
        if nodes > 1 { &[Parallelism::Pipeline] } else { &[] }
    }

    fn planner_prefill_chunks(&self) -> [i64; 2] {
        [512, 2048]
    }
}

/// llama.cpp RPC: node 0 is the client and computes the first layers; each further stage is an
/// `rpc-server` driven by blocking calls from the client: SET_TENSOR (activation in),
/// GRAPH_COMPUTE (graph serialized, deserialized and run), GET_TENSOR (activation back).
fn lower_rpc(plan: &Plan, tokens: u64) -> Lowered {
    let mut b = Builder::new(plan);
    let n = plan.n();
    let model = &plan.model;
    let cost = plan.net_cost();
    let act_bytes = tokens * model.hidden * 4; // f32 activations in ggml
    let half_call = cost.rpc_half_call_ns();
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
        let gbytes = cost.rpc_graph_bytes(graph_nodes);
        let x2 = b.send(0, i, gbytes, &[c2]);
        let s2 = b.cpu(i, cost.rpc_deserialize_ns(graph_nodes), "rpc deserialize", &[x2]);
        let g = b.gpu(i, ops, false, &[s2]);
        let r2 = b.send(i, 0, 8, &[g]);
        // GET_TENSOR: request, activation back.
        let c3 = b.cpu(0, half_call, "rpc get_tensor", &[r2]);
        let x3 = b.send(0, i, 64, &[c3]);
        let s3 = b.cpu(i, half_call, "rpc get_tensor", &[x3]);
        prev = b.send(i, 0, act_bytes, &[s3]);
    }
    b.host(0, &[prev]);
    b.finish(tokens)
}
