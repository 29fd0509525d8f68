//! The event core on a cluster small enough to check by hand: two nodes, one link each way.
//! Node 0 computes (40 ns), sends its activation to node 1 (10 ns on the link), node 1 computes
//! (30 ns) while node 0 computes its next piece (25 ns) that does not depend on node 1.
//!
//! Run: `cargo run --example event_core` (it asserts the timeline it prints; CI runs it).

use supernode::sim::{Jitter, ResourceKind, TaskGraph, execute};

fn main() {
    let mut g = TaskGraph::new();
    let gpu0 = g.add_resource("node0/gpu", ResourceKind::Gpu, 0);
    let gpu1 = g.add_resource("node1/gpu", ResourceKind::Gpu, 1);
    let link = g.add_resource("link 0->1", ResourceKind::Link, 0);

    let a = g.compute(gpu0, 40, "layer 0", &[]);
    let send = g.transfer(link, 10, 4096, &[a]);
    let b = g.compute(gpu1, 30, "layer 1", &[send]);
    let c = g.compute(gpu0, 25, "next piece", &[a]);

    let timeline = execute(&g, 0, &mut Jitter::none());
    for id in g.task_ids() {
        let t = timeline.timing(id);
        println!(
            "task {} ({:<10}) on {:<9} ready {:>3} start {:>3} end {:>3}",
            id.index(),
            g.task(id).label(),
            g.resource_of(id).name(),
            t.ready,
            t.start,
            t.end
        );
    }
    println!("makespan {} ns; busy per resource {:?}", timeline.makespan(), timeline.busy_by_resource());

    // By hand: a [0,40); the send [40,50); b [50,80) on node 1; c [40,65) on node 0, in
    // parallel with the send. The makespan is b's end; each resource is busy for its tasks' sum.
    let span = |t: supernode::sim::TaskId| (timeline.timing(t).start, timeline.timing(t).end);
    assert_eq!(span(a), (0, 40));
    assert_eq!(span(send), (40, 50));
    assert_eq!(span(b), (50, 80));
    assert_eq!(span(c), (40, 65));
    assert_eq!(timeline.makespan(), 80);
    assert_eq!(timeline.busy_by_resource(), [65, 30, 10]);
    println!("ok: the timeline matches the hand-computed one");
}
