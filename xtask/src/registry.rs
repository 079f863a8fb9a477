//! What users install: the crates as `cargo package` packs them, and packages that get them by version.
//!
//! * **package**: `cargo package` of every published crate, verified (each `.crate` is unpacked and built on its
//!   own, its dependencies on our other crates resolved from the crates packed before it).
//! * **registry**: the packages under `tests/registry/` name our crates by version only. They resolve them from
//!   the packed `.crate` files, unpacked under `target/registry/crates/` and put in place by `[patch.crates-io]`
//!   entries for our names only (every other crate still comes from crates.io). Each package is shown to resolve
//!   every crate of ours from there (not from the work tree), to fail to resolve without it (so nothing else can
//!   stand in), and then its tests run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::{Action, LIBRARIES, Step, cargo, packages_in, root, target_dir};

/// The version every crate of the workspace has (they are versioned together: docs/releasing.md).
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The packages that install our crates from the packed files.
const REGISTRY_DIR: &str = "tests/registry";

/// `cargo package` of the published crates (`LIBRARIES`), verified.
pub fn package() -> Vec<Step> {
    let mut args = vec!["package", "--allow-dirty"];
    for library in LIBRARIES {
        args.extend(["-p", library]);
    }
    vec![
        Step::task(
            "package: forget earlier packings",
            format!("rm -r $CARGO_HOME/registry/{{src,cache}}/*/managed-agents*-{VERSION}*"),
            forget_earlier_packings,
        ),
        Step::cargo("package the published crates (verified)", &args),
    ]
}

/// Forgets what an earlier `cargo package` verified. Verification serves the crates packed before one from a
/// temporary registry, and cargo takes a registry's version never to change: it does not unpack it again (under
/// `CARGO_HOME`), and it does not rebuild what it built from it (a registry crate's fingerprint is its version,
/// not its files). Without this, a second packing of the same version would verify against the first one's
/// crates. Our crates are on no other registry, so every registry copy of them is such a leftover.
fn forget_earlier_packings() -> Result<(), String> {
    let home = match std::env::var_os("CARGO_HOME") {
        Some(home) => PathBuf::from(home),
        None => PathBuf::from(std::env::var_os("HOME").ok_or("neither CARGO_HOME nor HOME is set")?).join(".cargo"),
    };
    let registry_sources = home.join("registry").join("src");
    forget_builds_from(&registry_sources)?;
    for kind in ["src", "cache"] {
        let Ok(registries) = std::fs::read_dir(home.join("registry").join(kind)) else { continue };
        for registry in registries.filter_map(Result::ok) {
            let Ok(entries) = std::fs::read_dir(registry.path()) else { continue };
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name().to_string_lossy().into_owned();
                if !(name.starts_with("managed-agents") && name.contains(&format!("-{VERSION}"))) {
                    continue;
                }
                let path = entry.path();
                let removed = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
                removed.map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
            }
        }
    }
    Ok(())
}

/// Removes the fingerprints of our crates built from a registry copy under `registry_sources`, so that cargo
/// rebuilds them: each build's dep-info file (`deps/<crate>-<hash>.d`) names its sources.
fn forget_builds_from(registry_sources: &Path) -> Result<(), String> {
    let debug = target_dir().join("debug");
    let Ok(entries) = std::fs::read_dir(debug.join("deps")) else { return Ok(()) };
    let marker = registry_sources.display().to_string();
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".d").filter(|stem| stem.starts_with("managed_agents")) else { continue };
        let built_from_registry = std::fs::read_to_string(entry.path()).is_ok_and(|info| info.contains(&marker));
        if !built_from_registry {
            continue;
        }
        let fingerprint = debug.join(".fingerprint").join(stem.replace('_', "-"));
        if fingerprint.exists() {
            std::fs::remove_dir_all(&fingerprint)
                .map_err(|e| format!("cannot remove {}: {e}", fingerprint.display()))?;
        }
    }
    Ok(())
}

/// The registry check, after [`package`]: unpack, then resolve and test each package of `tests/registry/`.
pub fn registry() -> Result<Vec<Step>, String> {
    let mut steps = vec![Step::task(
        "registry: unpack the packed crates",
        format!("tar -xzf target/package/<crate>-{VERSION}.crate -C target/registry/crates; write the patch"),
        unpack,
    )];
    let target = target_dir().display().to_string();
    for package in packages_in(REGISTRY_DIR)? {
        let name = package.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let manifest = package.join("Cargo.toml").display().to_string();
        steps.push(Step {
            name: format!("registry {name}: lockfile from the workspace"),
            action: Action::SeedLockfile { package_dir: package.clone() },
        });
        let check = manifest.clone();
        steps.push(Step::task(
            format!("registry {name}: fails to resolve without the packed crates"),
            format!("cargo metadata --manifest-path {manifest} (no patch: must fail)"),
            move || unresolvable_without_patch(&check),
        ));
        let check = manifest.clone();
        steps.push(Step::task(
            format!("registry {name}: every crate of ours comes from the packed crates"),
            format!("cargo metadata --manifest-path {manifest} --config {}", patch_file().display()),
            move || resolved_from_packed(&check, &package_patch_file(&package_name(&check))),
        ));
        let patch = package_patch_file(&name).display().to_string();
        steps.push(
            Step::cargo(format!("registry {name}: test"), &["test", "--manifest-path", &manifest, "--config", &patch])
                .env("CARGO_TARGET_DIR", target.clone()),
        );
    }
    Ok(steps)
}

/// The start of every patch file.
const PATCH_HEADER: &str = "# Written by `cargo xtask registry`: our crates from their packed `.crate` files, everything \
                            else from crates.io.\n[patch.crates-io]\n";

/// Where the packed crates are unpacked.
fn crates_dir() -> PathBuf {
    target_dir().join("registry").join("crates")
}

/// The cargo configuration that puts the unpacked crates in place of crates.io's, for our names only.
fn patch_file() -> PathBuf {
    target_dir().join("registry").join("patch.toml")
}

/// [`patch_file`] cut down to the crates one package uses (cargo warns about each patch it does not use).
fn package_patch_file(package: &str) -> PathBuf {
    target_dir().join("registry").join(format!("patch-{package}.toml"))
}

/// The directory name of the package of `manifest`.
fn package_name(manifest: &str) -> String {
    Path::new(manifest).parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Unpacks each published crate's `.crate` (fresh: an old unpacking must not stand in for a new one) and writes
/// [`patch_file`].
fn unpack() -> Result<(), String> {
    let dir = crates_dir();
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut patch = String::from(PATCH_HEADER);
    for library in LIBRARIES {
        let packed = target_dir().join("package").join(format!("{library}-{VERSION}.crate"));
        if !packed.is_file() {
            return Err(format!("{} is missing: run `cargo xtask package` first", packed.display()));
        }
        let status = Command::new("tar")
            .arg("-xzf")
            .arg(&packed)
            .arg("-C")
            .arg(&dir)
            .status()
            .map_err(|e| format!("cannot run tar: {e}"))?;
        if !status.success() {
            return Err(format!("tar -xzf {} exited with {status}", packed.display()));
        }
        let unpacked = dir.join(format!("{library}-{VERSION}"));
        patch.push_str(&format!("{library} = {{ path = {:?} }}\n", unpacked.display().to_string()));
    }
    std::fs::write(patch_file(), patch).map_err(|e| format!("cannot write {}: {e}", patch_file().display()))
}

fn metadata(manifest: &str, config: Option<&Path>) -> Result<Output, String> {
    let mut command = Command::new(cargo());
    command.current_dir(root()).args(["metadata", "--format-version", "1", "--manifest-path", manifest]);
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    command.output().map_err(|e| format!("cannot run cargo metadata: {e}"))
}

/// Without the patch, our crates are nowhere to be found: the check cannot be passed by a path dependency or by
/// the work tree.
fn unresolvable_without_patch(manifest: &str) -> Result<(), String> {
    let output = metadata(manifest, None)?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        return Err(format!(
            "{manifest} resolves without the packed crates: it must name ours by version only, with no path"
        ));
    }
    if !stderr.contains("managed-agents") {
        return Err(format!("cargo metadata failed for another reason than our crates missing:\n{stderr}"));
    }
    Ok(())
}

/// Every `managed-agents*` package of the resolved graph is one of the unpacked `.crate` files; writes
/// `package_patch` with just those.
fn resolved_from_packed(manifest: &str, package_patch: &Path) -> Result<(), String> {
    let output = metadata(manifest, Some(&patch_file()))?;
    if !output.status.success() {
        return Err(format!("cargo metadata failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("cannot read cargo metadata's output: {e}"))?;
    let packages = metadata["packages"].as_array().ok_or("cargo metadata listed no packages")?;
    let crates_dir = crates_dir();
    let mut ours = 0;
    let mut patch = String::from(PATCH_HEADER);
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default();
        if !name.starts_with("managed-agents") {
            continue;
        }
        let manifest_path = Path::new(package["manifest_path"].as_str().unwrap_or_default());
        if !manifest_path.starts_with(&crates_dir) {
            return Err(format!("{name} resolved from {}, not from the packed crates", manifest_path.display()));
        }
        let unpacked = manifest_path.parent().unwrap_or(manifest_path);
        patch.push_str(&format!("{name} = {{ path = {:?} }}\n", unpacked.display().to_string()));
        ours += 1;
    }
    if ours == 0 {
        return Err(format!("{manifest} depends on none of our crates"));
    }
    std::fs::write(package_patch, patch).map_err(|e| format!("cannot write {}: {e}", package_patch.display()))?;
    eprintln!("xtask: registry: {ours} crates of ours, each from {}", crates_dir.display());
    Ok(())
}
