//! Nothing here: see `benches/local_vs_rig.rs`.
