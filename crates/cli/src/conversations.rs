//! Conversations that continue: every run is kept in an SQLite file (through the host crate), under an id of
//! its own that the summary line shows; `--continue` goes on with the most recent one, `--resume ID` with a
//! given one, and `managed-agents sessions list|show|delete` looks after them. The file is `MANAGED_AGENTS_DB`,
//! else `managed-agents/managed-agents.sqlite3` in the user's data directory.

use std::sync::Arc;

use managed_agents_core::BoxError;
use managed_agents_core::conversation::{Conversation, ConversationFilter, SessionStore};
use managed_agents_store::SqliteStore;
use serde_json::{Value, json};

use crate::args::{Options, SessionsAction};
use crate::outcome::{self, EXIT_COMPLETED, Hinted, UsageError};
use crate::screen::shorten;

/// The metadata key of a conversation's first prompt (its title in listings).
pub const TITLE: &str = "title";
/// The most characters of the first prompt kept as the title.
const TITLE_CHARS: usize = 80;

/// Opens the conversation file, creating it (and its directory) when needed.
pub async fn open_store() -> Result<SqliteStore, BoxError> {
    let hint = || format!("set {} to a file this user may write", managed_agents_store::DB_PATH_ENV);
    let path = std::env::var_os(managed_agents_store::DB_PATH_ENV)
        .filter(|path| !path.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(SqliteStore::default_path)
        .ok_or_else(|| Hinted {
            error: Box::new(UsageError("there is no data directory to keep conversations in".into())),
            hint: hint(),
        })?;
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|error| Hinted {
            error: Box::new(UsageError(format!("cannot create {}: {error}", dir.display()))),
            hint: hint(),
        })?;
    }
    SqliteStore::open(&path).await.map_err(|error| Hinted { error: Box::new(error), hint: hint() }.into())
}

/// A new conversation id: eight hex digits, not taken yet.
async fn new_id(store: &dyn SessionStore) -> Result<String, BoxError> {
    loop {
        let id = format!("{:08x}", fastrand::u32(..));
        if store.load(&id).await?.is_none() {
            return Ok(id);
        }
    }
}

/// Which conversation a run goes on with: `--resume ID`, `--continue` (the most recent), or a new one. Returns
/// its id and whether it is new.
pub async fn pick(store: &dyn SessionStore, options: &Options, provider: &str) -> Result<(String, bool), BoxError> {
    let existing = match (&options.resume, options.continue_last) {
        (Some(id), _) => Some(store.load(id).await?.ok_or_else(|| Hinted {
            error: Box::new(UsageError(format!("there is no conversation `{id}`"))),
            hint: "`managed-agents sessions list` shows the ones kept".into(),
        })?),
        (None, true) => Some(latest(store).await?.ok_or_else(|| {
            UsageError("there is no conversation to continue yet: run one first (without --continue)".into())
        })?),
        (None, false) => None,
    };
    match existing {
        Some(conversation) if conversation.provider != provider => Err(Hinted {
            error: Box::new(UsageError(format!(
                "conversation `{}` ran on {}, not on {provider}",
                conversation.external_id, conversation.provider
            ))),
            hint: format!("pass --provider {} (with what it needs) to go on with it", conversation.provider),
        }
        .into()),
        Some(conversation) => Ok((conversation.external_id, false)),
        None => Ok((new_id(store).await?, true)),
    }
}

/// The most recently saved conversation.
async fn latest(store: &dyn SessionStore) -> Result<Option<Conversation>, BoxError> {
    let all = store.list(&ConversationFilter::new()).await?;
    Ok(all.into_iter().max_by_key(|conversation| (conversation.updated_at_ms, conversation.created_at_ms)))
}

/// A prompt as a conversation's title.
pub fn title(prompt: &str) -> String {
    let line = shorten(prompt.trim());
    match line.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Runs a `sessions` subcommand; returns the exit code.
pub async fn run(action: SessionsAction, json: bool) -> Result<u8, BoxError> {
    let store: Arc<dyn SessionStore> = Arc::new(open_store().await?);
    match action {
        SessionsAction::List => {
            let mut all = store.list(&ConversationFilter::new()).await?;
            all.sort_by_key(|conversation| (conversation.updated_at_ms, conversation.created_at_ms));
            if json {
                outcome::print_json(&Value::Array(all.iter().map(listed).collect()));
            } else if all.is_empty() {
                eprintln!("no conversations yet");
            } else {
                for conversation in &all {
                    println!(
                        "{}\t{}\t{}\t{} request{}\t{}",
                        conversation.external_id,
                        conversation.provider,
                        conversation.status.as_str(),
                        conversation.requests,
                        if conversation.requests == 1 { "" } else { "s" },
                        conversation.metadata.get(TITLE).and_then(Value::as_str).unwrap_or("")
                    );
                }
            }
        }
        SessionsAction::Show { id } => {
            let conversation = store.load(&id).await?.ok_or_else(|| Hinted {
                error: Box::new(UsageError(format!("there is no conversation `{id}`"))),
                hint: "`managed-agents sessions list` shows the ones kept".into(),
            })?;
            if json {
                outcome::print_json(&conversation);
            } else {
                show(&conversation);
            }
        }
        SessionsAction::Delete { id } => {
            if !store.purge(&id).await? {
                return Err(UsageError(format!("there is no conversation `{id}`")).into());
            }
            if json {
                outcome::print_json(&json!({"deleted": id}));
            } else {
                eprintln!("deleted {id}");
            }
        }
    }
    Ok(EXIT_COMPLETED)
}

/// A conversation in a listing.
fn listed(conversation: &Conversation) -> Value {
    json!({
        "id": conversation.external_id,
        "provider": conversation.provider,
        "status": conversation.status.as_str(),
        "requests": conversation.requests,
        "title": conversation.metadata.get(TITLE),
        "session_id": conversation.session_id,
        "created_at_ms": conversation.created_at_ms,
        "updated_at_ms": conversation.updated_at_ms,
    })
}

/// A conversation for people: its record, then the messages of its transcript.
fn show(conversation: &Conversation) {
    println!("id        {}", conversation.external_id);
    println!("provider  {}", conversation.provider);
    println!("status    {}", conversation.status.as_str());
    println!("requests  {}", conversation.requests);
    if let Some(session) = &conversation.session_id {
        println!("session   {session}");
    }
    if let Some(error) = &conversation.last_error {
        println!("error     {error}");
    }
    for message in conversation.transcript.iter().flatten() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
        let text = match message.get("content") {
            Some(Value::String(text)) => text.clone(),
            Some(other) if !other.is_null() => other.to_string(),
            _ => match message.get("tool_calls") {
                Some(calls) => format!("(tool calls) {calls}"),
                None => String::new(),
            },
        };
        println!("{role:>9}: {}", shorten(&text));
    }
}
