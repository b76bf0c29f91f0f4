//! The bucket's one row in its Durable Object's SQLite storage.
//!
//! - The state is the core codec's bytes in a BLOB (SQLite integers beyond 2^53 do not survive
//!   workers-rs), the policy name in TEXT, the idle deadline (epoch milliseconds) in REAL.
//! - Reading never creates the table, so an unknown key stays free; the first write does.
//! - A write is one statement, made once per object instance and run with its three bindings
//!   as arguments; the storage handle and the policy's name are kept as JavaScript values, so a
//!   write crosses into JavaScript for the state's bytes and the statement only.

use std::cell::{Cell, RefCell};

use worker::wasm_bindgen::{prelude::wasm_bindgen, JsCast, JsValue};
use worker::{js_sys, SqlStorage, SqlStorageValue};

use super::decide::Held;
use super::errors::ApiError;

/// The code of a stored bucket that was read but cannot be decoded.
const STORAGE_CORRUPT: &str = "STORAGE_CORRUPT";

/// The one statement a decision runs.
const WRITE: &str = "INSERT OR REPLACE INTO bucket (id, policy, state, idle_until) VALUES (0, ?, ?, ?)";

#[wasm_bindgen(wasm_bindgen = ::worker::wasm_bindgen)]
extern "C" {
    /// The runtime's `SqlStorage`, for a call workers-rs does not offer.
    type RawSql;

    /// `exec(statement, a, b, c)`: workers-rs's `exec` takes the statement as Rust text and the
    /// bindings as an array it builds and spreads on every call.
    #[wasm_bindgen(method, catch, js_name = exec)]
    fn exec3(this: &RawSql, statement: &JsValue, a: &JsValue, b: &JsValue, c: &JsValue) -> Result<JsValue, JsValue>;
}

/// A stored bucket and when it may be deleted.
pub struct Stored {
    /// The bucket and its policy.
    pub held: Held,
    /// When the bucket may be deleted, epoch milliseconds.
    pub idle_until: f64,
}

/// Reads and writes the row; remembers whether the table exists.
#[derive(Debug)]
pub struct BucketRow {
    /// The object's SQL storage, fetched once: `state.storage.sql` is two calls into the runtime.
    sql: SqlStorage,
    /// Whether this instance has seen the table (read it, or created it).
    table_ready: Cell<bool>,
    /// [`WRITE`] as a JavaScript string, made once: the statement's text would otherwise cross
    /// the boundary on every write.
    write: JsValue,
    /// The policy name last written, and the same as a JavaScript string: an object's policy
    /// rarely changes, so its name need not cross on every write.
    policy: RefCell<(String, JsValue)>,
}

impl BucketRow {
    /// The row in `sql`, the storage of the object that holds it.
    pub fn new(sql: SqlStorage) -> Self {
        BucketRow {
            sql,
            table_ready: Cell::new(false),
            write: JsValue::from_str(WRITE),
            policy: RefCell::new((String::new(), JsValue::from_str(""))),
        }
    }

    /// The stored bucket, `None` when there is none.
    ///
    /// # Errors
    /// `STORAGE_ERROR` when storage fails; `STORAGE_CORRUPT` ([`is_undecodable`]) when the row
    /// is there but cannot be read as a bucket.
    pub fn read(&self) -> Result<Option<Stored>, ApiError> {
        let sql = &self.sql;
        let tables = sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'bucket'", None);
        let exists = tables.map_err(ApiError::storage)?.raw().next().is_some();
        self.table_ready.set(exists);
        if !exists {
            return Ok(None);
        }
        let cursor =
            sql.exec("SELECT policy, state, idle_until FROM bucket WHERE id = 0", None).map_err(ApiError::storage)?;
        let Some(row) = cursor.raw().next() else {
            return Ok(None);
        };
        match row.map_err(ApiError::storage)?.as_slice() {
            [SqlStorageValue::String(policy), SqlStorageValue::Blob(bytes), idle_until] => {
                let held = Held::decode(policy.clone(), bytes).map_err(|e| {
                    ApiError::new(500, STORAGE_CORRUPT, format!("the stored bucket is unreadable: {e}"))
                })?;
                let idle_until = match idle_until {
                    SqlStorageValue::Float(ms) => *ms,
                    SqlStorageValue::Integer(ms) => *ms as f64,
                    _ => 0.0,
                };
                Ok(Some(Stored { held, idle_until }))
            }
            _ => Err(ApiError::new(500, STORAGE_CORRUPT, "the stored row has an unexpected shape")),
        }
    }

    /// Writes the row, creating the table if this instance has not yet seen it.
    ///
    /// # Errors
    /// `STORAGE_ERROR`; the table is then looked for again on the next write.
    pub fn write(&self, policy: &str, state: &[u8], idle_until: f64) -> Result<(), ApiError> {
        let written = self.create_table().and_then(|()| {
            let raw: &RawSql = self.sql.as_ref().unchecked_ref();
            let state = js_sys::Uint8Array::from(state);
            let policy = self.policy_value(policy);
            raw.exec3(&self.write, &policy.1, &state, &idle_until.into()).map_err(ApiError::storage)
        });
        if written.is_err() {
            self.forget();
        }
        written.map(|_| ())
    }

    /// Forgets that the table exists: storage was cleared, or a write failed.
    pub fn forget(&self) {
        self.table_ready.set(false);
    }

    /// `policy` and the same as a JavaScript string (lent, not cloned: a clone is a call into
    /// JavaScript too), made anew only when it differs from the last one.
    fn policy_value(&self, policy: &str) -> std::cell::Ref<'_, (String, JsValue)> {
        if self.policy.borrow().0 != policy {
            *self.policy.borrow_mut() = (policy.to_owned(), JsValue::from_str(policy));
        }
        self.policy.borrow()
    }

    fn create_table(&self) -> Result<(), ApiError> {
        if !self.table_ready.get() {
            self.sql.exec(
                "CREATE TABLE IF NOT EXISTS bucket (id INTEGER PRIMARY KEY, policy TEXT NOT NULL, state BLOB NOT NULL, idle_until REAL NOT NULL)",
                None,
            )
            .map_err(ApiError::storage)?;
            self.table_ready.set(true);
        }
        Ok(())
    }
}

/// Whether `error` says the stored bucket itself is bad, which no retry mends (as opposed to
/// storage failing to answer).
pub fn is_undecodable(error: &ApiError) -> bool {
    error.code == STORAGE_CORRUPT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_undecodable_bucket_counts_as_undecodable() {
        assert!(is_undecodable(&ApiError::new(500, STORAGE_CORRUPT, "bad bytes")));
        let passing = ApiError::storage(worker::Error::RustError("SQLITE_BUSY".into()));
        assert_eq!(passing.code, "STORAGE_ERROR");
        assert!(!is_undecodable(&passing));
    }
}
