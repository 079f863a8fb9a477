//! The provisioning store on either database: [`ProvisionStore`] for [`SqlStore`].
//!
//! Values are canonical JSON text ([`canonical_json`]), so SQL text equality is JSON equality: `delete_value` and
//! `compare_and_swap` compare in SQL. Anything writing the table directly must keep that invariant. Every
//! operation is one statement, atomic on its own in both databases; a compare-and-swap is a conditional
//! `UPDATE`, `INSERT … ON CONFLICT DO NOTHING` or `DELETE`, so no other writer (task, process or machine) can
//! commit between its comparison and its write.

use async_trait::async_trait;
use managed_agents_core::Error;
use managed_agents_core::provision::{ProvisionStore, canonical_json};
use serde_json::Value;

use crate::db::{Col, Sql, args, corrupt, sql};
use crate::store::SqlStore;

static GET: Sql = sql!("SELECT value FROM provision_entries WHERE key = $1");
static PUT: Sql = sql!(
    "INSERT INTO provision_entries (key, value) VALUES ($1, $2) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
);
static DELETE: Sql = sql!("DELETE FROM provision_entries WHERE key = $1");
static DELETE_VALUE: Sql = sql!("DELETE FROM provision_entries WHERE value = $1");
static INSERT_IF_ABSENT: Sql =
    sql!("INSERT INTO provision_entries (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING");
static REPLACE_IF: Sql = sql!("UPDATE provision_entries SET value = $3 WHERE key = $1 AND value = $2");
static DELETE_IF: Sql = sql!("DELETE FROM provision_entries WHERE key = $1 AND value = $2");
static COUNT: Sql = sql!("SELECT count(*) FROM provision_entries WHERE key = $1");
// Keys compare by their bytes (SQLite's BINARY collation; the PostgreSQL column's collation "C"), like Rust's
// `str`, so the keys under a prefix are the range from the prefix to its successor.
static KEYS_FROM: Sql = sql!("SELECT key FROM provision_entries WHERE key >= $1 ORDER BY key");
static KEYS_BETWEEN: Sql = sql!("SELECT key FROM provision_entries WHERE key >= $1 AND key < $2 ORDER BY key");

/// The smallest string greater than every string starting with `prefix` (in code point order, which is UTF-8
/// byte order); `None` when there is none (an empty prefix, or one made only of `char::MAX`).
fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = match last {
            char::MAX => continue,
            '\u{D7FF}' => '\u{E000}',
            other => char::from_u32(u32::from(other) + 1).unwrap_or(char::MAX),
        };
        chars.push(next);
        return Some(chars.into_iter().collect());
    }
    None
}

/// Decodes a stored value; text this store did not write is a typed error, not a panic.
fn decode(operation: &'static str, key: &str, text: &str) -> Result<Value, Error> {
    serde_json::from_str(text)
        .map_err(|error| corrupt(operation, format!("the value stored at `{key}` is not JSON: {error}")))
}

#[async_trait]
impl ProvisionStore for SqlStore {
    async fn get(&self, key: &str) -> Result<Option<Value>, Error> {
        let row = self.db.fetch_optional("get", self.sql(&GET), args![key], &[Col::Text]).await?;
        row.and_then(|mut row| row.text(0)).map(|text| decode("get", key, &text)).transpose()
    }

    async fn put(&self, key: &str, value: Value) -> Result<(), Error> {
        self.db.execute("put", self.sql(&PUT), args![key, canonical_json(&value)]).await.map(drop)
    }

    async fn delete(&self, key: &str) -> Result<(), Error> {
        self.db.execute("delete", self.sql(&DELETE), args![key]).await.map(drop)
    }

    async fn delete_value(&self, value: &Value) -> Result<u64, Error> {
        self.db.execute("delete_value", self.sql(&DELETE_VALUE), args![canonical_json(value)]).await
    }

    async fn compare_and_swap(&self, key: &str, expected: Option<&Value>, new: Option<Value>) -> Result<bool, Error> {
        const OPERATION: &str = "compare_and_swap";
        let changed = match (expected.map(canonical_json), new.as_ref().map(canonical_json)) {
            (None, Some(new)) => self.db.execute(OPERATION, self.sql(&INSERT_IF_ABSENT), args![key, new]).await?,
            (Some(expected), Some(new)) => {
                self.db.execute(OPERATION, self.sql(&REPLACE_IF), args![key, expected, new]).await?
            }
            (Some(expected), None) => self.db.execute(OPERATION, self.sql(&DELETE_IF), args![key, expected]).await?,
            // Nothing to write: "swapped" when the key is indeed absent.
            (None, None) => {
                let row = self.db.fetch_optional(OPERATION, self.sql(&COUNT), args![key], &[Col::Int]).await?;
                u64::from(row.and_then(|row| row.int(0)).unwrap_or(0) == 0)
            }
        };
        Ok(changed == 1)
    }

    async fn keys(&self, prefix: &str) -> Result<Vec<String>, Error> {
        let rows = match prefix_end(prefix) {
            Some(end) => self.db.fetch("keys", self.sql(&KEYS_BETWEEN), args![prefix, end], &[Col::Text]).await?,
            None => self.db.fetch("keys", self.sql(&KEYS_FROM), args![prefix], &[Col::Text]).await?,
        };
        // The range is exact; the filter only guards against a database collation other than bytes.
        Ok(rows.into_iter().filter_map(|mut row| row.text(0)).filter(|key| key.starts_with(prefix)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn the_end_of_a_prefix_is_its_successor() {
        assert_eq!(prefix_end("tags:").as_deref(), Some("tags;"));
        assert_eq!(prefix_end("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_end("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(prefix_end(""), None);
        assert_eq!(prefix_end("\u{10FFFF}\u{10FFFF}"), None);
        for key in ["tags:", "tags:a", "tags:\u{10FFFF}\u{10FFFF}", "tags:zz"] {
            assert!(key < prefix_end("tags:").unwrap().as_str(), "{key}");
        }
    }
}
