//! Topologies: full mesh, ring, switch; ports per node, cables, hops, the cabling plan.

use serde::Deserialize;

/// How the nodes are cabled.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// Every pair has a direct cable (N-1 ports per node, N(N-1)/2 cables).
    FullMesh,
    /// Each node cabled to its two neighbours (2 ports per node, N cables).
    Ring,
    /// Every node cabled to a switch (1 port per node).
    Switch,
    /// A single node.
    None,
}

impl Topology {
    /// Parses a topology id.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "full-mesh" => Some(Self::FullMesh),
            "ring" => Some(Self::Ring),
            "switch" => Some(Self::Switch),
            "none" => Some(Self::None),
            _ => None,
        }
    }

    /// The id used in scenario files.
    pub fn id(self) -> &'static str {
        match self {
            Self::FullMesh => "full-mesh",
            Self::Ring => "ring",
            Self::Switch => "switch",
            Self::None => "none",
        }
    }

    /// Ports each node needs for `n` nodes.
    pub fn ports_per_node(self, n: usize) -> usize {
        match (self, n) {
            (_, 0 | 1) | (Self::None, _) => 0,
            (Self::FullMesh, n) => n - 1,
            (Self::Ring, 2) => 1,
            (Self::Ring, _) => 2,
            (Self::Switch, _) => 1,
        }
    }

    /// Cables for `n` nodes.
    pub fn cables(self, n: usize) -> usize {
        match (self, n) {
            (_, 0 | 1) | (Self::None, _) => 0,
            (Self::FullMesh, n) => n * (n - 1) / 2,
            (Self::Ring, 2) => 1,
            (Self::Ring, n) => n,
            (Self::Switch, n) => n,
        }
    }

    /// Whether every pair of `n` nodes has a cable of its own: a full mesh, and a ring of two
    /// or three nodes (one cable; a triangle), whatever the label says.
    pub fn every_pair_cabled(self, n: usize) -> bool {
        match self {
            Self::FullMesh | Self::None => true,
            Self::Ring => n <= 3,
            Self::Switch => n <= 1,
        }
    }

    /// Number of link hops from `a` to `b` (shortest way).
    pub fn hops(self, n: usize, a: usize, b: usize) -> usize {
        if a == b {
            return 0;
        }
        match self {
            Self::FullMesh => 1,
            Self::Switch => 2,
            Self::Ring => {
                let d = a.abs_diff(b);
                d.min(n - d)
            }
            Self::None => 0,
        }
    }
}

/// The shortest path of nodes from `a` to `b` over the cables of `topology` that are not in
/// `lost` (unordered node pairs; for a switch, the pair `(a, n)` is node a's cable to the
/// switch, whose vertex is `n`). Breadth-first, neighbours in index order, so the path is the
/// lowest-numbered peer's detour (4-node mesh, 0-1 lost: 0, 2, 1). `None` when no path is left.
pub fn route_around(topology: Topology, n: usize, a: usize, b: usize, lost: &[(usize, usize)]) -> Option<Vec<usize>> {
    let is_lost = |x: usize, y: usize| lost.iter().any(|&(p, q)| (p, q) == (x, y) || (q, p) == (x, y));
    let vertices = if topology == Topology::Switch { n + 1 } else { n };
    let mut adj = vec![Vec::new(); vertices];
    for (x, _, y, _) in cabling(topology, n) {
        if !is_lost(x, y) {
            adj[x].push(y);
            adj[y].push(x);
        }
    }
    for v in &mut adj {
        v.sort_unstable();
    }
    let mut prev = vec![usize::MAX; vertices];
    prev[a] = a;
    let mut queue = std::collections::VecDeque::from([a]);
    while let Some(u) = queue.pop_front() {
        if u == b {
            let mut path = vec![b];
            while *path.last().expect("non-empty") != a {
                path.push(prev[*path.last().expect("non-empty")]);
            }
            path.reverse();
            return Some(path);
        }
        for &v in &adj[u] {
            // Traffic does not cut through other nodes' switch cables: only endpoints use them.
            if prev[v] == usize::MAX {
                prev[v] = u;
                queue.push_back(v);
            }
        }
    }
    None
}

/// The sets of nodes that stay fully cabled when the cables in `lost` are gone, largest first
/// (ties in index order): sets in which every pair has a cable of its own (a clique of the
/// cabling; single nodes included), or on a switch the nodes that kept their uplink. These are
/// the sets a runtime without forwarding can still run one instance on.
pub fn fully_cabled_sets(topology: Topology, n: usize, lost: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let is_lost = |x: usize, y: usize| lost.iter().any(|&(p, q)| (p, q) == (x, y) || (q, p) == (x, y));
    if topology == Topology::Switch {
        let up: Vec<usize> = (0..n).filter(|&a| !is_lost(a, n)).collect();
        let singles: Vec<Vec<usize>> = if up.len() > 1 { up.iter().map(|&a| vec![a]).collect() } else { Vec::new() };
        return std::iter::once(up).filter(|s| !s.is_empty()).chain(singles).collect();
    }
    let mut adjacent = vec![vec![false; n]; n];
    for (x, _, y, _) in cabling(topology, n) {
        if !is_lost(x, y) {
            adjacent[x][y] = true;
            adjacent[y][x] = true;
        }
    }
    // Every clique, each built once by adding ever higher nodes (a ring has O(n) of them; a
    // mesh, at most 9 nodes by its ports, at most 2^9).
    let mut sets = Vec::new();
    let mut stack: Vec<Vec<usize>> = (0..n).rev().map(|a| vec![a]).collect();
    while let Some(set) = stack.pop() {
        let last = *set.last().expect("non-empty");
        for next in (last + 1..n).rev() {
            if set.iter().all(|&m| adjacent[m][next]) {
                let mut bigger = set.clone();
                bigger.push(next);
                stack.push(bigger);
            }
        }
        sets.push(set);
    }
    sets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    sets
}

/// Whether every pair of nodes still has a path when the cables in `lost` are gone.
pub fn connected(topology: Topology, n: usize, lost: &[(usize, usize)]) -> bool {
    (1..n).all(|b| route_around(topology, n, 0, b, lost).is_some())
}

/// The cabling plan: which port of which node connects to which.
pub fn cabling(topology: Topology, n: usize) -> Vec<(usize, usize, usize, usize)> {
    // (node a, port on a, node b, port on b); for a switch, b == n means "the switch".
    let mut next_port = vec![0usize; n + 1];
    let mut out = Vec::new();
    let mut connect = |a: usize, b: usize, out: &mut Vec<_>| {
        let pa = next_port[a];
        next_port[a] += 1;
        let pb = next_port[b];
        next_port[b] += 1;
        out.push((a, pa, b, pb));
    };
    match topology {
        Topology::FullMesh => {
            for a in 0..n {
                for b in a + 1..n {
                    connect(a, b, &mut out);
                }
            }
        }
        Topology::Ring if n == 2 => connect(0, 1, &mut out),
        Topology::Ring if n > 2 => {
            for a in 0..n {
                connect(a.min((a + 1) % n), a.max((a + 1) % n), &mut out);
            }
        }
        Topology::Switch if n > 1 => {
            for a in 0..n {
                connect(a, n, &mut out);
            }
        }
        _ => {}
    }
    out
}
