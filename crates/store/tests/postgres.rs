//! What the PostgreSQL store adds to the contract: state survives reconnecting, several pools (as several
//! machines would) share leases safely, new schemas are migrated once when many connect at once, newer tables
//! are refused, bad URLs and unreachable servers are typed errors, and the password never shows. The tests that
//! need a server are ignored, with the reason, when `MANAGED_AGENTS_POSTGRES_URL` is not set (see `support`).

mod support;

use std::process::ExitCode;

use libtest_mimic::Trial;
use support::Gate;

const NEEDS_SERVER: &[&str] = &[
    "state_survives_reconnecting",
    "two_pools_take_turns_under_one_lease",
    "concurrent_connects_migrate_once",
    "tables_of_a_newer_version_are_refused",
    "a_conversation_written_behind_the_stores_back_is_a_typed_error",
    "debug_hides_the_password",
    "a_row_lock_held_too_long_is_retryable",
    "a_model_config_round_trips_without_its_credential",
    "a_database_of_the_first_session_schema_is_upgraded",
];
const NEEDS_NO_SERVER: &[&str] = &[
    "an_unreachable_server_is_retryable",
    "a_malformed_url_is_a_typed_error_without_it",
    "an_invalid_schema_is_refused",
];

fn main() -> ExitCode {
    support::run(trials(&support::postgres()))
}

#[cfg(not(feature = "postgres"))]
fn trials(gate: &Gate) -> Vec<Trial> {
    NEEDS_SERVER
        .iter()
        .chain(NEEDS_NO_SERVER)
        .map(|name| support::unavailable(format!("postgres::{name}"), gate))
        .collect()
}

#[cfg(feature = "postgres")]
fn trials(gate: &Gate) -> Vec<Trial> {
    let offline = Gate::Run(String::new());
    let mut trials = Vec::new();
    for name in NEEDS_SERVER {
        trials.push(support::trial(format!("postgres::{name}"), gate, move |url| checks::run(name, url)));
    }
    for name in NEEDS_NO_SERVER {
        trials.push(support::trial(format!("postgres::{name}"), &offline, move |url| checks::run(name, url)));
    }
    trials
}

#[cfg(feature = "postgres")]
mod checks {
    use std::sync::Arc;
    use std::time::Duration;

    use managed_agents_core::Error;
    use managed_agents_core::conversation::{Conversation, ConversationFilter, SessionStore};
    use managed_agents_core::provision::ProvisionStore;
    use managed_agents_store::{PostgresOptions, PostgresStore};
    use serde_json::json;
    use sqlx::{Connection, Executor, PgConnection};

    use crate::support;

    pub async fn run(name: &str, url: String) {
        match name {
            "state_survives_reconnecting" => state_survives_reconnecting(url).await,
            "two_pools_take_turns_under_one_lease" => two_pools_take_turns_under_one_lease(url).await,
            "concurrent_connects_migrate_once" => concurrent_connects_migrate_once(url).await,
            "tables_of_a_newer_version_are_refused" => tables_of_a_newer_version_are_refused(url).await,
            "a_conversation_written_behind_the_stores_back_is_a_typed_error" => {
                a_conversation_written_behind_the_stores_back_is_a_typed_error(url).await
            }
            "debug_hides_the_password" => debug_hides_the_password(url).await,
            "a_row_lock_held_too_long_is_retryable" => a_row_lock_held_too_long_is_retryable(url).await,
            "a_model_config_round_trips_without_its_credential" => {
                a_model_config_round_trips_without_its_credential(url).await
            }
            "a_database_of_the_first_session_schema_is_upgraded" => {
                a_database_of_the_first_session_schema_is_upgraded(url).await
            }
            "an_unreachable_server_is_retryable" => an_unreachable_server_is_retryable().await,
            "a_malformed_url_is_a_typed_error_without_it" => a_malformed_url_is_a_typed_error_without_it().await,
            "an_invalid_schema_is_refused" => an_invalid_schema_is_refused().await,
            other => panic!("no check is called {other}"),
        }
    }

    async fn open(url: &str, schema: &str) -> PostgresStore {
        PostgresStore::connect_with(url, PostgresOptions::new().schema(schema)).await.expect("connect")
    }

    /// A connection of its own, behind the store's back, with `schema` first on its search path.
    async fn raw(url: &str, schema: &str) -> PgConnection {
        let mut connection = PgConnection::connect(url).await.expect("connect");
        connection.execute(format!("SET search_path TO {schema}").as_str()).await.expect("search_path");
        connection
    }

    async fn state_survives_reconnecting(url: String) {
        let target = url.clone();
        support::with_schema(&url, move |schema| async move {
            let store = open(&target, &schema).await;
            store.put("provision:a", json!({"agent_id": "agent_1"})).await.expect("put");
            let lease =
                store.acquire("c1", "worker-a", Duration::from_secs(600)).await.expect("acquire").expect("free");
            let mut conversation = Conversation::new("c1", "claude");
            conversation.session_id = Some("sesn_1".into());
            store.save(&conversation, &lease).await.expect("save");
            store.close().await;

            let again = open(&target, &schema).await;
            assert_eq!(again.get("provision:a").await.expect("get"), Some(json!({"agent_id": "agent_1"})));
            let loaded = again.load("c1").await.expect("load").expect("the conversation");
            assert_eq!(loaded.session_id.as_deref(), Some("sesn_1"));
            assert_eq!(again.acquire("c1", "worker-b", Duration::from_secs(600)).await.expect("acquire"), None);
            again.save(&loaded, &lease).await.expect("the lease is still current after reconnecting");
        })
        .await;
    }

    /// Two pools (as two machines would have) drive one conversation from many tasks: every turn is kept, and no
    /// two holders ever held the lease at once (an `inside` count kept in the record itself).
    async fn two_pools_take_turns_under_one_lease(url: String) {
        const TURNS: usize = 20;
        let target = url.clone();
        support::with_schema(&url, move |schema| async move {
            let pools = [Arc::new(open(&target, &schema).await), Arc::new(open(&target, &schema).await)];
            let mut workers = tokio::task::JoinSet::new();
            for worker in 0..4 {
                let store = Arc::clone(&pools[worker % 2]);
                workers.spawn(async move {
                    let holder = format!("worker-{worker}");
                    for n in 0..TURNS {
                        let lease = tokio::time::timeout(Duration::from_secs(60), async {
                            loop {
                                match store.acquire("shared", &holder, Duration::from_secs(60)).await.expect("acquire")
                                {
                                    Some(lease) => break lease,
                                    None => tokio::time::sleep(Duration::from_micros(500)).await,
                                }
                            }
                        })
                        .await
                        .expect("the lease within a minute");
                        let mut conversation = store
                            .load("shared")
                            .await
                            .expect("load")
                            .unwrap_or_else(|| Conversation::new("shared", "local"));
                        conversation.requests += 1;
                        conversation.transcript.get_or_insert_with(Vec::new).push(json!({"worker": worker, "n": n}));
                        store.save(&conversation, &lease).await.expect("save under the lease");
                        store.release(&lease).await.expect("release");
                    }
                });
            }
            while let Some(joined) = workers.join_next().await {
                joined.expect("a worker");
            }
            let conversation = pools[0].load("shared").await.expect("load").expect("the conversation");
            assert_eq!(conversation.requests, 4 * TURNS as u64, "lost turns");
            assert_eq!(conversation.transcript.map(|turns| turns.len()), Some(4 * TURNS), "lost turns");
        })
        .await;
    }

    async fn concurrent_connects_migrate_once(url: String) {
        let target = url.clone();
        support::with_schema(&url, move |schema| async move {
            let mut connects = tokio::task::JoinSet::new();
            for _ in 0..8 {
                let (url, schema) = (target.clone(), schema.clone());
                connects.spawn(async move {
                    PostgresStore::connect_with(&url, PostgresOptions::new().schema(schema)).await
                });
            }
            let mut stores = Vec::new();
            while let Some(connected) = connects.join_next().await {
                stores.push(connected.expect("a connect task").expect("connect"));
            }
            let mut takers = tokio::task::JoinSet::new();
            for (n, store) in stores.into_iter().enumerate() {
                takers.spawn(async move { store.acquire("c1", &format!("worker-{n}"), Duration::from_secs(60)).await });
            }
            let mut winners = 0;
            while let Some(taken) = takers.join_next().await {
                winners += usize::from(taken.expect("a taker").expect("acquire").is_some());
            }
            assert_eq!(winners, 1, "one lease, eight pools");
            let mut connection = raw(&target, &schema).await;
            let versions: Vec<(String, i64)> =
                sqlx::query_as("SELECT component, version FROM managed_agents_schema ORDER BY component")
                    .fetch_all(&mut connection)
                    .await
                    .expect("versions");
            assert_eq!(versions, [("provision".to_string(), 1), ("sessions".to_string(), 4)]);
        })
        .await;
    }

    async fn tables_of_a_newer_version_are_refused(url: String) {
        let target = url.clone();
        support::with_schema(&url, move |schema| async move {
            open(&target, &schema).await.close().await;
            let mut connection = raw(&target, &schema).await;
            let bumped = connection
                .execute("UPDATE managed_agents_schema SET version = version + 1 WHERE component = 'sessions'")
                .await
                .expect("bump");
            assert_eq!(bumped.rows_affected(), 1);
            match PostgresStore::connect_with(&target, PostgresOptions::new().schema(schema)).await {
                Err(Error::Store { operation: "open", retryable: false, message, .. }) => {
                    assert!(message.contains("newer"), "{message}")
                }
                other => panic!("expected a refusal, got {other:?}"),
            }
        })
        .await;
    }

    async fn a_conversation_written_behind_the_stores_back_is_a_typed_error(url: String) {
        let target = url.clone();
        support::with_schema(&url, move |schema| async move {
            let store = open(&target, &schema).await;
            let mut connection = raw(&target, &schema).await;
            connection
                .execute(
                    "INSERT INTO conversations VALUES ('bad', 'local', NULL, 'sleeping', NULL, '{}', NULL, 0, 1, 1, NULL);
                     INSERT INTO conversations VALUES
                         ('bad-config', 'local', NULL, 'idle', NULL, '{}', NULL, 0, 2, 2, '{\"model\": 5}');",
                )
                .await
                .expect("insert");
            for external_id in ["bad", "bad-config"] {
                assert!(
                    matches!(store.load(external_id).await, Err(Error::Store { operation: "load", retryable: false, .. })),
                    "{external_id}"
                );
            }
            assert!(matches!(
                store.list(&ConversationFilter::new()).await,
                Err(Error::Store { operation: "list", .. })
            ));
        })
        .await;
    }

    async fn debug_hides_the_password(url: String) {
        use std::str::FromStr;
        let options = sqlx::postgres::PgConnectOptions::from_str(&url).expect("the URL");
        let with_password = format!(
            "postgres://{}:s3cr3t-password@{}:{}/{}",
            options.get_username(),
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap_or("postgres"),
        );
        let target = with_password.clone();
        support::with_schema(&url, move |schema| async move {
            // The test server trusts every login, so the password is accepted and never checked.
            let store = open(&target, &schema).await;
            let debug = format!("{store:?}");
            assert!(!debug.contains("s3cr3t"), "{debug}");
            assert!(debug.contains(&schema), "{debug}");
        })
        .await;
    }

    /// A save waiting for a row lock that another connection holds past the acquire timeout fails retryably, and
    /// succeeds once the lock is gone.
    async fn a_row_lock_held_too_long_is_retryable(url: String) {
        let target = url.clone();
        support::with_schema(&url, move |schema| async move {
            let options = PostgresOptions::new().schema(schema.clone()).acquire_timeout(Duration::from_millis(300));
            let store = PostgresStore::connect_with(&target, options).await.expect("connect");
            let lease = store.acquire("c1", "worker", Duration::from_secs(60)).await.expect("acquire").expect("free");
            let mut blocker = raw(&target, &schema).await;
            blocker.execute("BEGIN").await.expect("begin");
            blocker
                .execute("SELECT token FROM conversation_leases WHERE external_id = 'c1' FOR UPDATE")
                .await
                .expect("lock the lease row");
            match store.save(&Conversation::new("c1", "local"), &lease).await {
                Err(error @ Error::Store { operation: "save", .. }) => assert!(error.is_retryable(), "{error:?}"),
                other => panic!("expected a retryable save error, got {other:?}"),
            }
            blocker.execute("ROLLBACK").await.expect("rollback");
            store.save(&Conversation::new("c1", "local"), &lease).await.expect("save once the lock is gone");
        })
        .await;
    }

    /// Every row of every table in `schema`, as text.
    async fn every_row(connection: &mut PgConnection, schema: &str) -> Vec<String> {
        let tables: Vec<(String,)> =
            sqlx::query_as("SELECT tablename::text FROM pg_catalog.pg_tables WHERE schemaname = $1")
                .bind(schema)
                .fetch_all(&mut *connection)
                .await
                .expect("the tables");
        assert!(tables.len() >= 5, "the store's tables: {tables:?}");
        let mut rows = Vec::new();
        for (table,) in tables {
            let found: Vec<(String,)> = sqlx::query_as(&format!("SELECT t::text FROM {schema}.{table} t"))
                .fetch_all(&mut *connection)
                .await
                .expect("the rows");
            rows.extend(found.into_iter().map(|(row,)| row));
        }
        rows
    }

    /// A conversation's model configuration comes back as saved, without its credential, which no row of any of
    /// the store's tables holds (while the destination saved with it is there).
    async fn a_model_config_round_trips_without_its_credential(url: String) {
        use managed_agents_core::ModelConfig;

        let target = url.clone();
        support::with_schema(&url, move |schema| async move {
            let store = open(&target, &schema).await;
            let lease = store.acquire("c1", "worker", Duration::from_secs(600)).await.expect("acquire").expect("free");
            let secret = "sk-postgres-credential-9e2a";
            let destination = "http://127.0.0.1:9/postgres-destination";
            let mut conversation = Conversation::new("c1", "claude");
            conversation.model_config = ModelConfig::new()
                .model("anthropic:claude-sonnet-4-6")
                .credential(secret)
                .destination(destination)
                .metadata("team", "support");
            store.save(&conversation, &lease).await.expect("save");
            let mut plain = Conversation::new("c2", "claude");
            plain.model_config = ModelConfig::new().credential("sk-only-a-credential-77");
            let other = store.acquire("c2", "worker", Duration::from_secs(600)).await.expect("acquire").expect("free");
            store.save(&plain, &other).await.expect("save");

            let expected = conversation.model_config.without_credential();
            assert_eq!(store.load("c1").await.expect("load").expect("stored").model_config, expected);
            assert!(store.load("c2").await.expect("load").expect("stored").model_config.is_empty());
            assert_eq!(store.list(&ConversationFilter::new()).await.expect("list")[0].model_config, expected);
            let mut connection = raw(&target, &schema).await;
            let (stored,): (Option<String>,) =
                sqlx::query_as("SELECT model_config FROM conversations WHERE external_id = 'c2'")
                    .fetch_one(&mut connection)
                    .await
                    .expect("select");
            assert_eq!(stored, None, "a configuration with only a credential is stored as none");
            let rows = every_row(&mut connection, &schema).await;
            assert!(rows.iter().any(|row| row.contains(destination)), "the configuration is stored: {rows:?}");
            assert!(
                !rows.iter().any(|row| row.contains(secret) || row.contains("sk-only-a-credential")),
                "a credential reached the database: {rows:?}"
            );
        })
        .await;
    }

    /// A schema of the first session version (before model configurations and the inbox) is upgraded on
    /// connect: its rows read as having no model configuration, configurations are stored from then on, and its
    /// conversations take queued messages.
    async fn a_database_of_the_first_session_schema_is_upgraded(url: String) {
        use managed_agents_core::ModelConfig;

        let target = url.clone();
        support::with_schema(&url, move |schema| async move {
            let mut connection = PgConnection::connect(&target).await.expect("connect");
            connection.execute(format!("CREATE SCHEMA {schema}").as_str()).await.expect("the schema");
            connection.execute(format!("SET search_path TO {schema}").as_str()).await.expect("search_path");
            connection
                .execute(
                    "CREATE TABLE managed_agents_schema (component TEXT PRIMARY KEY, version BIGINT NOT NULL);
                     INSERT INTO managed_agents_schema VALUES ('provision', 1), ('sessions', 1);",
                )
                .await
                .expect("the versions table");
            let provision = include_str!("../migrations/postgres/provision/0001_entries.sql");
            connection.execute(provision).await.expect("provision v1");
            let sessions = include_str!("../migrations/postgres/sessions/0001_conversations.sql");
            connection.execute(sessions).await.expect("sessions v1");
            connection
                .execute(
                    "INSERT INTO conversations VALUES ('old', 'claude', 'sesn_1', 'idle', NULL, '{}', NULL, 3, 1, 2)",
                )
                .await
                .expect("an old row");
            connection.close().await.expect("close");

            let store = open(&target, &schema).await;
            let old = store.load("old").await.expect("load").expect("the old row");
            assert_eq!((old.session_id.as_deref(), old.requests), (Some("sesn_1"), 3));
            assert!(old.model_config.is_empty(), "an old row has no model configuration");
            let mut connection = raw(&target, &schema).await;
            let (version,): (i64,) =
                sqlx::query_as("SELECT version FROM managed_agents_schema WHERE component = 'sessions'")
                    .fetch_one(&mut connection)
                    .await
                    .expect("the version");
            assert_eq!(version, 4, "upgraded through the model configuration (2), the inbox (3) and the journal (4)");

            let lease = store.acquire("old", "worker", Duration::from_secs(600)).await.expect("acquire").expect("free");
            let mut updated = old.clone();
            updated.model_config = ModelConfig::new().model("claude-sonnet-4-6");
            store.save(&updated, &lease).await.expect("save");
            assert_eq!(store.load("old").await.expect("load").expect("stored").model_config, updated.model_config);
            store.release(&lease).await.expect("release");
            // The old conversation takes queued messages.
            let inbox = store.inbox().expect("an inbox");
            inbox.enqueue("old", "hello again", &serde_json::Map::new()).await.expect("enqueue");
            let claimed = inbox.claim("worker", Duration::from_secs(600), 10).await.expect("claim");
            assert_eq!(claimed.iter().map(|lease| lease.external_id.as_str()).collect::<Vec<_>>(), ["old"]);
        })
        .await;
    }

    async fn an_unreachable_server_is_retryable() {
        // A port that was free a moment ago: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let url = format!("postgres://user:s3cr3t@127.0.0.1:{port}/db");
        let options = PostgresOptions::new().acquire_timeout(Duration::from_secs(2));
        match PostgresStore::connect_with(&url, options).await {
            Err(error @ Error::Store { operation: "connect", .. }) => {
                assert!(error.is_retryable(), "{error:?}");
                assert!(!format!("{error} {error:?}").contains("s3cr3t"), "{error:?}");
            }
            other => panic!("expected a connect error, got {other:?}"),
        }
    }

    async fn a_malformed_url_is_a_typed_error_without_it() {
        for url in ["postgres://user:s3cr3t@127.0.0.1:notaport/db", "mysql://user:s3cr3t@127.0.0.1/db", "s3cr3t"] {
            match PostgresStore::connect(url).await {
                Err(error @ Error::Store { operation: "connect", retryable: false, .. }) => {
                    assert!(!format!("{error} {error:?}").contains("s3cr3t"), "{url}: {error:?}")
                }
                other => panic!("{url}: expected a connect error, got {other:?}"),
            }
        }
    }

    async fn an_invalid_schema_is_refused() {
        for schema in ["", "Upper", "1st", "semi;colon", "quote\"d", &"x".repeat(64)] {
            let options = PostgresOptions::new().schema(schema);
            match PostgresStore::connect_with("postgres://user@127.0.0.1:1/db", options).await {
                Err(Error::InvalidOption { option: "schema", .. }) => {}
                other => panic!("{schema:?}: expected InvalidOption, got {other:?}"),
            }
        }
    }
}
