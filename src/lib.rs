//! supernode: a digital twin of desktop AI clusters (Mac Studio M3 Ultra over Thunderbolt 5
//! RDMA, DGX Spark / GB10, Ryzen AI Max+ 395) running distributed LLM inference.
//!
//! Data flows one way: scenario file -> [`scenario::Scenario`] -> [`engine::Plan`] -> task
//! graphs per forward step -> [`sim`] timelines -> [`estimate::Estimate`] -> [`report`].
//!
//! The modules, from the bottom layer up (a module imports only from layers below it; the
//! `layers` integration test checks this): [`util`]; [`sim`], [`hw`], [`llm`]; [`catalog`];
//! [`profile`]; [`engine`]; [`scenario`]; [`estimate`]; [`calibrate`]; [`capacity`]; [`report`];
//! [`cli`]. ARCHITECTURE.md describes each one's job and what it must not know.

#![warn(missing_docs)]

pub mod util;

pub mod hw;
pub mod llm;
pub mod sim;

pub mod catalog;
pub mod profile;

pub mod engine;

pub mod scenario;

pub mod estimate;

pub mod calibrate;

pub mod capacity;

pub mod report;

pub mod cli;
