//! The declared `rust-version` is true of the dependencies: no crate that a published crate of ours pulls in
//! (with all its features, as the lockfile resolves them) declares a newer minimum Rust than that crate does.
//!
//! Only one toolchain can be installed on our machines, so the crates are not *built* with the declared minimum;
//! within our own code clippy's `incompatible_msrv` lint (denied with the other warnings) refuses standard library
//! items newer than it, and this check covers the dependencies (docs/releasing.md).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

use crate::{LIBRARIES, cargo, root};

/// A `major.minor.patch` Rust version, for comparing.
fn parse(version: &str) -> (u64, u64, u64) {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Fails when a dependency of a published crate (not one of ours: each of ours is checked against its own
/// declaration) needs a newer Rust than the crate declares.
pub fn check() -> Result<(), String> {
    let output = Command::new(cargo())
        .current_dir(root())
        .args(["metadata", "--format-version", "1", "--all-features", "--locked"])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo metadata failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    let metadata: Value =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("cannot read cargo metadata's output: {e}"))?;
    let packages: BTreeMap<&str, &Value> = metadata["packages"]
        .as_array()
        .ok_or("no packages in cargo metadata")?
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?, p)))
        .collect();
    let nodes: BTreeMap<&str, &Value> = metadata["resolve"]["nodes"]
        .as_array()
        .ok_or("no resolve graph in cargo metadata")?
        .iter()
        .filter_map(|n| Some((n["id"].as_str()?, n)))
        .collect();
    let mut problems = Vec::new();
    for (id, package) in &packages {
        let name = package["name"].as_str().unwrap_or_default();
        if !LIBRARIES.contains(&name) {
            continue;
        }
        let Some(declared) = package["rust_version"].as_str() else {
            problems.push(format!("{name} declares no rust-version"));
            continue;
        };
        // The crate's normal and build dependencies, transitively, stopping at our own crates.
        let mut seen = BTreeSet::new();
        let mut next = vec![*id];
        while let Some(current) = next.pop() {
            let Some(node) = nodes.get(current) else { continue };
            for dep in node["deps"].as_array().into_iter().flatten() {
                let dev_only = dep["dep_kinds"]
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().all(|k| k["kind"].as_str() == Some("dev")));
                let Some(dep_id) = dep["pkg"].as_str() else { continue };
                if dev_only || !seen.insert(dep_id) {
                    continue;
                }
                let Some(dep_package) = packages.get(dep_id) else { continue };
                let dep_name = dep_package["name"].as_str().unwrap_or_default();
                if dep_name.starts_with("managed-agents") {
                    continue;
                }
                if let Some(needed) = dep_package["rust_version"].as_str()
                    && parse(needed) > parse(declared)
                {
                    let version = dep_package["version"].as_str().unwrap_or_default();
                    problems.push(format!(
                        "{name} declares rust-version {declared}, but {dep_name} {version} needs {needed}"
                    ));
                }
                next.push(dep_id);
            }
        }
    }
    if problems.is_empty() {
        eprintln!("xtask: msrv: every dependency of the published crates builds with their declared rust-version");
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}
