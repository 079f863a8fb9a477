//! What a new session mounts and may use: its resources ([`SessionResource`]: files, memory stores) and the
//! vaults of stored credentials it may draw on ([`VAULT_IDS`]), passed as provider options and checked before
//! the session is created.

use managed_agents_core::Error;
use serde_json::{Map, Value, json};

/// The provider option naming the vaults (their `vlt_…` ids, an array of strings) whose stored credentials a new
/// session's agent may use (the create-session field `vault_ids`).
///
/// ```
/// # use managed_agents_claude::VAULT_IDS;
/// # use managed_agents_core::SessionOptions;
/// let options = SessionOptions::new().provider_option(VAULT_IDS, serde_json::json!(["vlt_01"]));
/// ```
pub const VAULT_IDS: &str = "vault_ids";

/// The most characters of a memory store attachment's instructions the service takes.
pub const MAX_MEMORY_INSTRUCTIONS: usize = 4096;

/// A resource mounted into a new session's container, passed (as a list) in the provider option
/// [`SessionResource::OPTION`]:
///
/// ```
/// # use managed_agents_claude::{MemoryAccess, SessionResource};
/// # use managed_agents_core::SessionOptions;
/// let resources = [
///     SessionResource::file("file_011").mount_path("/mnt/session/inputs/data.csv"),
///     SessionResource::memory_store("memstore_01").access(MemoryAccess::ReadOnly).instructions("House style."),
/// ];
/// let value = SessionResource::option_value(&resources).unwrap();
/// let options = SessionOptions::new().provider_option(SessionResource::OPTION, value);
/// ```
///
/// Other resource kinds of the wire (a GitHub repository, say) may be given in the option as raw JSON objects;
/// they are sent as given.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionResource {
    /// A file uploaded through the Files API (`{type: "file", file_id, mount_path?}`).
    File {
        /// The file's id (`file_…`).
        file_id: String,
        /// Where it is mounted (an absolute path; the service's default is `/mnt/session/uploads/<file_id>`).
        mount_path: Option<String>,
    },
    /// A memory store (`{type: "memory_store", memory_store_id, access?, instructions?}`).
    MemoryStore {
        /// The store's id (`memstore_…`).
        memory_store_id: String,
        /// How the session may use it (the service's default is read-write).
        access: Option<MemoryAccess>,
        /// Guidance for the agent on how to use the store, at most [`MAX_MEMORY_INSTRUCTIONS`] characters.
        instructions: Option<String>,
    },
}

/// How a session may use a mounted memory store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryAccess {
    /// Read and write (`read_write`).
    ReadWrite,
    /// Read only, mounted as a read-only filesystem (`read_only`).
    ReadOnly,
}

impl MemoryAccess {
    /// The wire's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadWrite => "read_write",
            Self::ReadOnly => "read_only",
        }
    }

    fn from_wire(name: &str) -> Option<Self> {
        match name {
            "read_write" => Some(Self::ReadWrite),
            "read_only" => Some(Self::ReadOnly),
            _ => None,
        }
    }
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::invalid_option("resources", reason)
}

impl SessionResource {
    /// The provider option carrying a new session's resources (`resources`, the create-session field it becomes):
    /// an array, as [`SessionResource::option_value`] writes it.
    pub const OPTION: &'static str = "resources";

    /// The file `file_id`, mounted where the service mounts uploads unless [`SessionResource::mount_path`] says.
    pub fn file(file_id: impl Into<String>) -> Self {
        Self::File { file_id: file_id.into(), mount_path: None }
    }

    /// The memory store `memory_store_id`, with the service's default access unless [`SessionResource::access`]
    /// says.
    pub fn memory_store(memory_store_id: impl Into<String>) -> Self {
        Self::MemoryStore { memory_store_id: memory_store_id.into(), access: None, instructions: None }
    }

    /// A file mounted at `path` (no effect on a memory store, whose mount path the service derives).
    #[must_use]
    pub fn mount_path(mut self, path: impl Into<String>) -> Self {
        if let Self::File { mount_path, .. } = &mut self {
            *mount_path = Some(path.into());
        }
        self
    }

    /// A memory store used with `access` (no effect on a file).
    #[must_use]
    pub fn access(mut self, access: MemoryAccess) -> Self {
        if let Self::MemoryStore { access: slot, .. } = &mut self {
            *slot = Some(access);
        }
        self
    }

    /// A memory store with guidance for the agent (no effect on a file).
    #[must_use]
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        if let Self::MemoryStore { instructions, .. } = &mut self {
            *instructions = Some(text.into());
        }
        self
    }

    /// Checks the resource: ids not blank, a mount path absolute, instructions at most
    /// [`MAX_MEMORY_INSTRUCTIONS`] characters; anything else is an [`Error::InvalidOption`] for `resources`.
    pub fn validate(&self) -> Result<(), Error> {
        match self {
            Self::File { file_id, mount_path } => {
                if file_id.trim().is_empty() {
                    return Err(invalid("a file resource needs a file_id"));
                }
                if let Some(path) = mount_path
                    && (!path.starts_with('/') || path.contains('\0'))
                {
                    return Err(invalid(format!("the mount path `{path}` is not an absolute path")));
                }
            }
            Self::MemoryStore { memory_store_id, instructions, .. } => {
                if memory_store_id.trim().is_empty() {
                    return Err(invalid("a memory store resource needs a memory_store_id"));
                }
                if instructions.as_ref().is_some_and(|text| text.chars().count() > MAX_MEMORY_INSTRUCTIONS) {
                    return Err(invalid(format!(
                        "memory store instructions exceed {MAX_MEMORY_INSTRUCTIONS} characters"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The wire shape.
    pub fn to_value(&self) -> Value {
        match self {
            Self::File { file_id, mount_path } => {
                let mut value = json!({"type": "file", "file_id": file_id});
                if let Some(path) = mount_path {
                    value["mount_path"] = json!(path);
                }
                value
            }
            Self::MemoryStore { memory_store_id, access, instructions } => {
                let mut value = json!({"type": "memory_store", "memory_store_id": memory_store_id});
                if let Some(access) = access {
                    value["access"] = json!(access.as_str());
                }
                if let Some(text) = instructions {
                    value["instructions"] = json!(text);
                }
                value
            }
        }
    }

    /// Reads a file or memory store resource from its wire shape, checked ([`SessionResource::validate`]);
    /// `Ok(None)` for another kind of resource, an [`Error::InvalidOption`] for a malformed one.
    pub fn from_value(value: &Value) -> Result<Option<Self>, Error> {
        let object = value.as_object().ok_or_else(|| invalid("every resource must be a JSON object"))?;
        let text = |key: &str| -> Result<Option<String>, Error> {
            match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(text)) => Ok(Some(text.clone())),
                Some(_) => Err(invalid(format!("`{key}` must be a string"))),
            }
        };
        let resource = match object.get("type").and_then(Value::as_str) {
            Some("file") => {
                Self::File { file_id: text("file_id")?.unwrap_or_default(), mount_path: text("mount_path")? }
            }
            Some("memory_store") => {
                let access = match text("access")? {
                    None => None,
                    Some(name) => Some(MemoryAccess::from_wire(&name).ok_or_else(|| {
                        invalid(format!("memory store access `{name}` is not read_write or read_only"))
                    })?),
                };
                Self::MemoryStore {
                    memory_store_id: text("memory_store_id")?.unwrap_or_default(),
                    access,
                    instructions: text("instructions")?,
                }
            }
            Some(_) => return Ok(None),
            None => return Err(invalid("every resource needs a string `type`")),
        };
        resource.validate()?;
        Ok(Some(resource))
    }

    /// The option's value for `resources`, each checked ([`SessionResource::validate`]).
    pub fn option_value(resources: &[SessionResource]) -> Result<Value, Error> {
        resources.iter().map(|resource| resource.validate().map(|()| resource.to_value())).collect()
    }
}

/// The create-session fields the resource options ask for — `resources` (files and memory stores checked, other
/// kinds sent as given) and `vault_ids` (non-blank strings) — added to `body`; a malformed option is an
/// [`Error::InvalidOption`] and nothing is created.
pub(super) fn add_session_fields(options: &Map<String, Value>, body: &mut Map<String, Value>) -> Result<(), Error> {
    if let Some(option) = options.get(SessionResource::OPTION) {
        let items = option.as_array().ok_or_else(|| invalid("expected an array of resources"))?;
        let resources = items
            .iter()
            .map(|item| Ok(SessionResource::from_value(item)?.map_or_else(|| item.clone(), |r| r.to_value())))
            .collect::<Result<Vec<Value>, Error>>()?;
        body.insert("resources".into(), Value::Array(resources));
    }
    if let Some(option) = options.get(VAULT_IDS) {
        let wrong = || Error::invalid_option("vault_ids", "expected an array of vault ids (non-blank strings)");
        let ids = option.as_array().ok_or_else(wrong)?;
        if ids.iter().any(|id| id.as_str().is_none_or(|id| id.trim().is_empty())) {
            return Err(wrong());
        }
        body.insert("vault_ids".into(), option.clone());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_round_trip_through_their_wire_shape() {
        let file = SessionResource::file("file_1").mount_path("/data/x.csv");
        assert_eq!(file.to_value(), json!({"type": "file", "file_id": "file_1", "mount_path": "/data/x.csv"}));
        let store = SessionResource::memory_store("memstore_1").access(MemoryAccess::ReadOnly).instructions("notes");
        assert_eq!(
            store.to_value(),
            json!({"type": "memory_store", "memory_store_id": "memstore_1", "access": "read_only", "instructions": "notes"})
        );
        for resource in [file, store, SessionResource::file("f").access(MemoryAccess::ReadOnly)] {
            assert_eq!(SessionResource::from_value(&resource.to_value()).unwrap(), Some(resource));
        }
        let github = json!({"type": "github_repository", "url": "https://github.com/o/r"});
        assert_eq!(SessionResource::from_value(&github).unwrap(), None, "another kind is not modelled");
    }

    #[test]
    fn malformed_resources_and_vault_ids_are_refused() {
        let bad = [
            SessionResource::file(" "),
            SessionResource::file("f").mount_path("relative/path"),
            SessionResource::memory_store(""),
            SessionResource::memory_store("m").instructions("x".repeat(MAX_MEMORY_INSTRUCTIONS + 1)),
        ];
        for resource in bad {
            let error = SessionResource::option_value(std::slice::from_ref(&resource)).unwrap_err();
            assert!(matches!(error, Error::InvalidOption { option: "resources", .. }), "{resource:?}: {error}");
        }
        let options = |key: &str, value: Value| Map::from_iter([(key.to_string(), value)]);
        let mut body = Map::new();
        for (key, value) in [
            ("resources", json!({"type": "file"})),
            ("resources", json!(["file_1"])),
            ("resources", json!([{"file_id": "file_1"}])),
            ("resources", json!([{"type": "memory_store", "memory_store_id": "m", "access": "write_only"}])),
            ("vault_ids", json!("vlt_1")),
            ("vault_ids", json!(["vlt_1", ""])),
        ] {
            assert!(add_session_fields(&options(key, value.clone()), &mut body).is_err(), "{key}: {value}");
        }
        assert!(body.is_empty(), "nothing is added from a refused option");
    }
}
