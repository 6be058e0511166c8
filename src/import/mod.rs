//! Importers: other tools' session formats converted into the optimizer's records format.
//!
//! - [`swe_agent`]: mini-swe-agent trajectories (`*.traj.json`, format `mini-swe-agent-1.1`).

pub mod swe_agent;
