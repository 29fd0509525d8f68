//! supernode: a digital twin of desktop AI clusters (Mac Studio M3 Ultra over Thunderbolt 5
//! RDMA, DGX Spark / GB10, Ryzen AI Max+ 395) running distributed LLM inference.
//!
//! Data flows one way: scenario file -> [`scenario::Scenario`] -> [`engine::Plan`] -> task
//! graphs per forward step -> [`sim`] timelines -> [`estimate::Estimate`] -> [`report`].

pub mod calibrate;
pub mod catalog;
pub mod charts;
pub mod cli;
pub mod engine;
pub mod estimate;
pub mod hw;
pub mod llama_bench;
pub mod llm;
pub mod planner;
pub mod profile;
pub mod report;
pub mod scenario;
pub mod sim;
pub mod sweep;
pub mod validate;
