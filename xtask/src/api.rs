//! The public-API listing: `docs/api/<crate>.txt`, one line per public item of each published library (with all
//! its features), generated from rustdoc JSON by the `public-api` crate. `cargo xtask api` regenerates the
//! listings and fails on any difference from the committed ones, so every change to the surface shows in a diff
//! and is a decision; `cargo xtask api --update` writes them.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use crate::{PUBLISHED_LIBRARIES, cargo, root, target_dir};

/// Where the committed listings live.
const LISTING_DIR: &str = "docs/api";

/// Regenerates every listing; writes them with `update`, else compares them with the committed ones.
pub fn run(update: bool) -> Result<(), String> {
    rustdoc_json()?;
    let mut changed = Vec::new();
    for library in PUBLISHED_LIBRARIES {
        let listing = listing(library)?;
        let path = root().join(LISTING_DIR).join(format!("{library}.txt"));
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed == listing {
            continue;
        }
        if update {
            std::fs::create_dir_all(root().join(LISTING_DIR))
                .map_err(|e| format!("cannot create {LISTING_DIR}: {e}"))?;
            std::fs::write(&path, &listing).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            eprintln!("xtask: api: wrote {}", path.display());
        } else {
            report(library, &committed, &listing);
            changed.push(*library);
        }
    }
    if changed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the public API of {} differs from {LISTING_DIR}/: review the lines above, then `cargo xtask api --update` \
             and commit the listings (a removed or changed line is a breaking change: see docs/releasing.md)",
            changed.join(", ")
        ))
    }
}

/// The listing of one library: its public items, one per line, sorted; blanket impls left out (they follow from
/// the items and are the standard library's, not ours).
fn listing(library: &str) -> Result<String, String> {
    let json = json_target_dir().join("doc").join(format!("{}.json", library.replace('-', "_")));
    let api = public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .build()
        .map_err(|e| format!("cannot read the rustdoc JSON of {library} ({}): {e}", json.display()))?;
    let mut text = String::new();
    for item in api.items() {
        text.push_str(&item.to_string());
        text.push('\n');
    }
    Ok(text)
}

/// Where the rustdoc JSON is built: a target directory of its own, because cargo fingerprints `RUSTC_BOOTSTRAP`
/// and would otherwise rebuild the shared directory's dependencies on every switch between this and the other
/// steps.
fn json_target_dir() -> PathBuf {
    target_dir().join("api")
}

/// Builds the rustdoc JSON of every published library, with all features, in one `cargo doc` (one feature
/// resolution, so the dependencies are checked once). rustdoc's JSON output is unstable: on the stable toolchain
/// `RUSTC_BOOTSTRAP=1` unlocks it for this one invocation (its format version must match the pinned
/// `public-api`, see `xtask/Cargo.toml`).
fn rustdoc_json() -> Result<(), String> {
    let mut command = Command::new(cargo());
    command
        .current_dir(root())
        .env("CARGO_TARGET_DIR", json_target_dir())
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTDOCFLAGS", "-Z unstable-options --output-format json")
        .args(["doc", "--quiet", "--no-deps", "--lib", "--all-features"]);
    for library in PUBLISHED_LIBRARIES {
        command.args(["-p", library]);
    }
    let status = command.status().map_err(|e| format!("cannot run cargo doc: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("cargo doc (rustdoc JSON) exited with {status}")) }
}

/// Prints what a regenerated listing adds and removes.
fn report(library: &str, committed: &str, listing: &str) {
    let old: BTreeSet<&str> = committed.lines().collect();
    let new: BTreeSet<&str> = listing.lines().collect();
    eprintln!("xtask: api: {library} differs from {LISTING_DIR}/{library}.txt:");
    for line in old.difference(&new) {
        eprintln!("  - {line}");
    }
    for line in new.difference(&old) {
        eprintln!("  + {line}");
    }
}
