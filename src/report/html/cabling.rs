//! The cabling of a cluster drawn as an SVG picture: nodes as boxes around a circle (or around
//! a switch), each cable a line between the two ports it plugs into, ports numbered as the
//! planner's cabling list numbers them (`hw::cabling`).

use std::fmt::Write as _;

use crate::catalog::catalog;
use crate::hw::{PortKind, Topology, cabling};

use super::esc;

/// What a fabric's ports are called on the picture.
fn port_name(fabric: &str) -> &'static str {
    match catalog().fabric(fabric).map(|f| (f.port, f.min_tb_generation)) {
        Some((PortKind::Thunderbolt, g)) if g >= 5 => "Thunderbolt 5",
        Some((PortKind::Thunderbolt, _)) => "Thunderbolt/USB4",
        Some((PortKind::Qsfp, _)) => "QSFP",
        Some((PortKind::Ethernet, _)) => "Ethernet",
        Some((PortKind::Wireless, _)) => "Wi-Fi",
        _ => "port",
    }
}

/// The SVG of `nodes` (preset ids) cabled by `fabric` as `topology`, and the cable list.
pub fn cabling_svg(nodes: &[String], fabric: &str, topology: &str) -> (String, Vec<String>) {
    let n = nodes.len();
    let topo = Topology::parse(topology).unwrap_or(Topology::None);
    let plan = if n > 1 { cabling(topo, n) } else { vec![] };
    let switch = topo == Topology::Switch && n > 1;
    let (w, h) = (980.0, if n > 4 { 760.0 } else { 640.0 });
    let (cx, cy, r) = (w / 2.0, h / 2.0 + 10.0, if n > 1 { h / 2.0 - 110.0 } else { 0.0 });
    let (bw, bh) = (240.0, 64.0);
    let at = |i: usize| {
        let a = -std::f64::consts::FRAC_PI_2 + std::f64::consts::TAU * i as f64 / n.max(1) as f64;
        (cx + r * 1.3 * a.cos(), cy + r * a.sin())
    };
    // The point on a box's edge towards (tx, ty): where a port sits.
    let edge = |(x, y): (f64, f64), (hw, hh): (f64, f64), (tx, ty): (f64, f64)| {
        let (dx, dy) = (tx - x, ty - y);
        let k = 1.0 / ((dx.abs() / hw).max(dy.abs() / hh)).max(1e-9);
        (x + dx * k, y + dy * k)
    };
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="cabling diagram" font-family="DejaVu Sans, Verdana, sans-serif">"##
    );
    let _ = write!(s, r##"<rect width="{w}" height="{h}" fill="#ffffff"/>"##);
    let title = if n <= 1 {
        "one node: no cables".to_string()
    } else {
        format!(
            "{} {} cable{} · {} · {}",
            plan.len(),
            port_name(fabric),
            if plan.len() == 1 { "" } else { "s" },
            esc(fabric),
            esc(topology)
        )
    };
    let _ = write!(s, r##"<text x="20" y="32" font-size="20" font-weight="bold" fill="#222">{title}</text>"##);
    let (sw, sh) = (180.0, 54.0);
    let mut lines = Vec::new();
    let mut ports = String::new();
    for (k, (a, pa, b, pb)) in plan.iter().enumerate() {
        let pa_xy = at(*a);
        let (pb_center, pb_half) = if *b == n { ((cx, cy), (sw / 2.0, sh / 2.0)) } else { (at(*b), (bw / 2.0, bh / 2.0)) };
        let p1 = edge(pa_xy, (bw / 2.0, bh / 2.0), pb_center);
        let p2 = edge(pb_center, pb_half, pa_xy);
        let color = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"][k % 8];
        let _ = write!(
            s,
            r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="3"><title>cable {}</title></line>"##,
            p1.0,
            p1.1,
            p2.0,
            p2.1,
            k + 1
        );
        for ((x, y), port) in [(p1, pa + 1), (p2, pb + 1)] {
            let _ = write!(
                ports,
                r##"<circle cx="{x:.1}" cy="{y:.1}" r="9" fill="#fff" stroke="{color}" stroke-width="2"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#222">{port}</text>"##,
                y + 4.0
            );
        }
        let right = if *b == n { format!("switch port {}", pb + 1) } else { format!("node {b} ({}) port {}", nodes[*b], pb + 1) };
        lines.push(format!("cable {}: node {a} ({}) {} port {} ↔ {right}", k + 1, nodes[*a], port_name(fabric), pa + 1));
    }
    if switch {
        let _ = write!(
            s,
            r##"<rect x="{:.1}" y="{:.1}" width="{sw}" height="{sh}" rx="6" fill="#444"/><text x="{cx}" y="{:.1}" font-size="16" text-anchor="middle" fill="#fff">{} switch</text>"##,
            cx - sw / 2.0,
            cy - sh / 2.0,
            cy + 6.0,
            esc(fabric)
        );
    }
    for (i, id) in nodes.iter().enumerate() {
        let (x, y) = at(i);
        let node = catalog().node(id);
        let sub = node.map_or(String::new(), |nd| format!("{} · {:.0} GB", nd.chip, nd.memory_gb));
        let _ = write!(
            s,
            r##"<rect x="{:.1}" y="{:.1}" width="{bw}" height="{bh}" rx="8" fill="#eef4fb" stroke="#1f4e79" stroke-width="2"/><text x="{x:.1}" y="{:.1}" font-size="13" font-weight="bold" text-anchor="middle" fill="#1f2d3d">node {i}: {}</text><text x="{x:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="#333">{}</text>"##,
            x - bw / 2.0,
            y - bh / 2.0,
            y - 6.0,
            esc(&short(id, 22)),
            y + 14.0,
            esc(&sub)
        );
    }
    s.push_str(&ports);
    s.push_str("</svg>");
    (s, lines)
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n { s.to_string() } else { s.chars().take(n - 1).collect::<String>() + "…" }
}
