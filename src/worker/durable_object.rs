//! One Durable Object per bucket key (`idFromName(key)`): the single place a bucket lives, so
//! every request for the key, wherever it lands, sees one consistent bucket.
//!
//! - The bucket is read from SQLite storage once, kept in memory, and decided on at `Date.now()`.
//! - A decision that changes the bucket writes it (one synchronous SQL statement) before the
//!   answer leaves: the output gate holds the answer until the write is durable. A decision that
//!   changes nothing writes nothing.
//! - Decisions never await between reading and writing the bucket, so they are serialized
//!   without locks.
//! - The state is the core codec's bytes in a BLOB (SQLite integers beyond 2^53 do not survive
//!   workers-rs), the policy name in TEXT.
//! - Refill is lazy: no refill alarms. One alarm deletes the bucket once it has been idle for its
//!   time to full refill plus the policy's grace, so idle keys cost nothing.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

// The #[durable_object] expansion names `wasm_bindgen`.
use worker::wasm_bindgen::{self, prelude::wasm_bindgen, JsCast, JsValue};
use worker::wasm_bindgen_futures::{future_to_promise, JsFuture};
use worker::{durable_object, js_sys, Env, Request, Response, SqlStorageValue, State};

use super::client::{js_millis, now_nanos};
use super::decide::{self, Held};
use super::errors::ApiError;
use super::protocol::{round_up, Command, Deleted, MILLISECOND};
use super::respond;
use super::settings;

/// Grace for a bucket whose policy has gone from the configuration.
const DEFAULT_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// The Durable Object class that holds one bucket (`class_name = "BucketObject"`).
#[durable_object]
pub struct BucketObject {
    state: State,
    env: Env,
    /// `None` until read from storage.
    held: RefCell<Option<Option<Held>>>,
    /// When the bucket may be deleted, epoch milliseconds (kept in storage too).
    idle_until: Cell<f64>,
    /// When this instance's idle alarm is set for, epoch milliseconds; `None` when it has set
    /// none. Shared with the wait for an alarm write, which clears it if the write fails.
    alarm_at: Rc<Cell<Option<f64>>>,
    /// Whether the table exists (the first write creates it; a read never does).
    table_ready: Cell<bool>,
    /// [`WRITE`] as a JavaScript string, made once: the statement's text would otherwise cross
    /// the boundary on every write.
    write: JsValue,
}

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

impl worker::DurableObject for BucketObject {
    fn new(state: State, env: Env) -> Self {
        BucketObject {
            state,
            env,
            held: RefCell::new(None),
            idle_until: Cell::new(0.0),
            alarm_at: Rc::new(Cell::new(None)),
            table_ready: Cell::new(false),
            write: JsValue::from_str(WRITE),
        }
    }

    /// Refused: the worker calls the object over RPC (`decide`), which skips building a request
    /// and a response per decision; one way in keeps one set of checks.
    async fn fetch(&self, _req: Request) -> worker::Result<Response> {
        let refusal =
            respond::problem(&ApiError::new(404, "RPC_ONLY", "a bucket object is called over RPC (decide), not fetch"));
        let mut response = Response::ok(refusal.body)?.with_status(refusal.status);
        for (name, value) in &refusal.headers {
            response.headers_mut().set(name, value)?;
        }
        Ok(response)
    }

    /// A failed alarm throws, so the runtime runs it again (with backoff): the bucket is neither
    /// lost to a passing storage error nor kept forever for want of a rescheduled alarm.
    async fn alarm(&self) -> worker::Result<Response> {
        self.alarm_at.set(None);
        if let Err(error) = self.expire().await {
            worker::console_error!("idle alarm failed, to be retried: {} {}", error.code, error.message);
            return Err(worker::Error::RustError(format!("{}: {}", error.code, error.message)));
        }
        Response::empty()
    }
}

/// The RPC surface. The worker-build shim exports a plain class, which the runtime does not
/// call over RPC; `src/worker/entry.js` wraps it in a class extending `DurableObject`.
#[wasm_bindgen(wasm_bindgen = ::worker::wasm_bindgen, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
impl BucketObject {
    /// Decides `command` (a [`Command`] as JSON): `[status, body]`, 200 and the outcome as JSON
    /// or an error status and its problem document; a promise of it when a storage operation
    /// other than the bucket's write (an alarm, a deletion) must finish first.
    ///
    /// Not an `async fn`: that would build a promise and schedule a task for every decision,
    /// while only about one in an idle period waits for anything.
    #[wasm_bindgen(js_name = decide)]
    pub fn decide_rpc(&self, command: &str) -> JsValue {
        // serde_json, not JSON.parse: JavaScript would round 64-bit integers.
        match serde_json::from_str::<Command>(command) {
            Ok(Command::Delete) => self.delete_command(),
            Ok(command) => self.decide(&command).unwrap_or_else(|error| pair(failed(&error))),
            Err(e) => pair(failed(&ApiError::bad_request("INVALID_COMMAND", e.to_string()))),
        }
    }
}

impl BucketObject {
    /// A consume, reserve, inspection, replacement or reset: `[200, outcome]`, after the idle
    /// alarm's write when the decision moved it.
    fn decide(&self, command: &Command) -> Result<JsValue, ApiError> {
        let settings = settings::load(&self.env)?;
        self.load()?;
        let now = now_nanos();
        let effect = {
            let mut held = self.held.borrow_mut();
            decide::apply(held.as_mut().expect("loaded"), command, &settings.policies, now)?
        };
        let body = serde_json::to_string(&effect.outcome).map_err(|e| ApiError::internal(e.to_string()))?;
        if !effect.changed {
            return Ok(pair((200, body)));
        }
        self.persist(&settings, now)?;
        // The decision is durable: answer it even if the idle alarm could not be set (the next
        // write tries again). A 500 here would send the front worker into its failure mode for
        // tokens already spent.
        match self.schedule_alarm() {
            Ok(None) => Ok(pair((200, body))),
            Ok(Some(written)) => Ok(self.after_alarm(written, body)),
            Err(error) => {
                worker::console_error!("idle alarm not set: {} {}", error.code, error.message);
                Ok(pair((200, body)))
            }
        }
    }

    /// `[200, body]` once the alarm is `written`; a failed write is logged and forgotten (unless
    /// a later write replaced it), so the next decision that writes the bucket sets it again.
    fn after_alarm(&self, written: js_sys::Promise, body: String) -> JsValue {
        let alarm_at = Rc::clone(&self.alarm_at);
        let at = alarm_at.get(); // the time just written
        after(written, move |result| {
            if let Err(error) = result {
                forget_alarm(&alarm_at, at);
                worker::console_error!("idle alarm not set: {}", describe(&error));
            }
            (200, body)
        })
    }

    /// `DELETE`: `[200, {"deleted": …}]` once storage is cleared.
    fn delete_command(&self) -> JsValue {
        let (existed, cleared) = match self.start_delete() {
            Ok(started) => started,
            Err(error) => return pair(failed(&error)),
        };
        after(cleared, move |result| match result {
            Ok(_) => match serde_json::to_string(&Deleted { deleted: existed }) {
                Ok(body) => (200, body),
                Err(e) => failed(&ApiError::internal(e.to_string())),
            },
            Err(error) => failed(&js_storage(error)),
        })
    }

    /// Reads the bucket on first use. Reading never creates storage: an unknown key stays free.
    fn load(&self) -> Result<(), ApiError> {
        if self.held.borrow().is_some() {
            return Ok(());
        }
        let sql = self.state.storage().sql();
        let tables = sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'bucket'", None);
        let exists = tables.map_err(storage)?.raw().next().is_some();
        self.table_ready.set(exists);
        let held = if exists { self.read_row()? } else { None };
        *self.held.borrow_mut() = Some(held);
        Ok(())
    }

    fn read_row(&self) -> Result<Option<Held>, ApiError> {
        let sql = self.state.storage().sql();
        let cursor = sql.exec("SELECT policy, state, idle_until FROM bucket WHERE id = 0", None).map_err(storage)?;
        let Some(row) = cursor.raw().next() else {
            return Ok(None);
        };
        match row.map_err(storage)?.as_slice() {
            [SqlStorageValue::String(policy), SqlStorageValue::Blob(bytes), idle_until] => {
                self.idle_until.set(match idle_until {
                    SqlStorageValue::Float(ms) => *ms,
                    SqlStorageValue::Integer(ms) => *ms as f64,
                    _ => 0.0,
                });
                let held = Held::decode(policy.clone(), bytes).map_err(|e| {
                    ApiError::new(500, STORAGE_CORRUPT, format!("the stored bucket is unreadable: {e}"))
                })?;
                Ok(Some(held))
            }
            _ => Err(ApiError::new(500, STORAGE_CORRUPT, "the stored row has an unexpected shape")),
        }
    }

    /// Writes the bucket and its idle deadline; on failure forgets the in-memory copy so the
    /// next request reads what storage really holds.
    fn persist(&self, settings: &settings::Settings, now: i64) -> Result<(), ApiError> {
        let (policy, bytes, idle_until) = {
            let held = self.held.borrow();
            let held = held.as_ref().and_then(Option::as_ref).expect("a changed bucket exists");
            let grace = settings.policies.get(&held.policy).map_or(DEFAULT_GRACE, |p| p.idle_grace);
            let ttl_millis = round_up(held.bucket.idle_expiry_nanos(grace, now), MILLISECOND).unwrap_or(i64::MAX);
            (JsValue::from_str(&held.policy), held.encode(), idle_deadline(now, ttl_millis))
        };
        let written = self.table().map_err(storage).and_then(|sql| {
            let sql: &RawSql = sql.as_ref().unchecked_ref();
            let state = js_sys::Uint8Array::from(bytes.as_slice());
            sql.exec3(&self.write, &policy, &state, &idle_until.into()).map_err(js_storage)
        });
        if let Err(error) = written {
            *self.held.borrow_mut() = None;
            self.table_ready.set(false);
            return Err(error);
        }
        self.idle_until.set(idle_until);
        Ok(())
    }

    /// The SQL storage, with the bucket table created if this instance has not yet seen it.
    fn table(&self) -> worker::Result<worker::SqlStorage> {
        let sql = self.state.storage().sql();
        if !self.table_ready.get() {
            sql.exec(
                "CREATE TABLE IF NOT EXISTS bucket (id INTEGER PRIMARY KEY, policy TEXT NOT NULL, state BLOB NOT NULL, idle_until REAL NOT NULL)",
                None,
            )?;
            self.table_ready.set(true);
        }
        Ok(sql)
    }

    /// One alarm per object instance: when it fires early (the bucket was used since), it is
    /// set again for the new deadline, so a busy bucket costs one alarm write per idle period.
    /// A deadline brought forward (a reset, a replacement) moves it earlier. Returns the write
    /// when one was issued.
    fn schedule_alarm(&self) -> Result<Option<js_sys::Promise>, ApiError> {
        let deadline = self.idle_until.get();
        if self.alarm_at.get().is_some_and(|at| at <= deadline) {
            return Ok(None);
        }
        self.write_alarm(deadline).map(Some)
    }

    /// Issues the alarm's write for `at_millis` and counts it as set (a failed write clears
    /// it again); the promise settles with the write.
    fn write_alarm(&self, at_millis: f64) -> Result<js_sys::Promise, ApiError> {
        let storage = self.state.as_raw().storage().map_err(js_storage)?;
        let at = js_sys::Date::new(&at_millis.into());
        let written = storage.set_alarm(at, JsValue::NULL.unchecked_into()).map_err(js_storage)?;
        self.alarm_at.set(Some(at_millis));
        Ok(written)
    }

    /// [`Self::write_alarm`], awaited (the alarm handler's way): a failed write is forgotten and
    /// fails the handler, which the runtime retries.
    async fn set_alarm(&self, at_millis: f64) -> Result<(), ApiError> {
        let written = self.write_alarm(at_millis)?;
        JsFuture::from(written).await.map(|_| ()).map_err(|error| {
            forget_alarm(&self.alarm_at, Some(at_millis));
            js_storage(error)
        })
    }

    /// The idle alarm: delete the bucket if it has been idle long enough, else wait again. A
    /// stored bucket that cannot be decoded (corrupt, or written by a newer format) is deleted:
    /// requests meanwhile got the policy's failure mode, and keeping it would prolong that. Any
    /// other read error may pass, so it fails the alarm (to be retried) and deletes nothing:
    /// deleting a bucket hands its key a full one.
    async fn expire(&self) -> Result<(), ApiError> {
        if let Err(error) = self.load() {
            if !is_undecodable(&error) {
                return Err(error);
            }
            worker::console_error!("deleting an unreadable bucket: {} {}", error.code, error.message);
            return self.delete().await;
        }
        if !matches!(*self.held.borrow(), Some(Some(_))) {
            return Ok(());
        }
        if (js_millis() as f64) < self.idle_until.get() {
            return self.set_alarm(self.idle_until.get()).await;
        }
        self.delete().await
    }

    /// Deletes everything the object stores.
    async fn delete(&self) -> Result<(), ApiError> {
        let (_, cleared) = self.start_delete()?;
        JsFuture::from(cleared).await.map(|_| ()).map_err(js_storage)
    }

    /// Forgets the bucket and issues the deletion of everything the object stores; returns
    /// whether there was a bucket, and the deletion.
    fn start_delete(&self) -> Result<(bool, js_sys::Promise), ApiError> {
        let existed = match self.load() {
            Ok(()) => matches!(*self.held.borrow(), Some(Some(_))),
            Err(_) => true, // unreadable, but there
        };
        // Forget first: a request arriving while storage is cleared starts a fresh bucket.
        *self.held.borrow_mut() = Some(None);
        self.alarm_at.set(None);
        self.table_ready.set(false);
        let storage = self.state.as_raw().storage().map_err(js_storage)?;
        Ok((existed, storage.delete_all().map_err(js_storage)?))
    }
}

/// Forgets the alarm whose write failed, unless a later write already replaced it.
fn forget_alarm(alarm_at: &Cell<Option<f64>>, failed: Option<f64>) {
    if alarm_at.get() == failed {
        alarm_at.set(None);
    }
}

/// `[status, body]` for the front worker.
fn pair((status, body): (u16, String)) -> JsValue {
    js_sys::Array::of2(&status.into(), &body.into()).into()
}

/// A promise of `[status, body]`: `answer` given how `pending` (a storage operation) settled.
fn after(
    pending: js_sys::Promise,
    answer: impl FnOnce(Result<JsValue, JsValue>) -> (u16, String) + 'static,
) -> JsValue {
    let settled = async move { Ok(pair(answer(JsFuture::from(pending).await))) };
    future_to_promise(settled).into()
}

/// The message of a JavaScript error, or the value as text.
fn describe(error: &JsValue) -> String {
    worker::Error::from(error.clone()).to_string()
}

/// `now` (ns) plus `ttl_millis`, in epoch milliseconds, within what a JavaScript `Date` holds.
fn idle_deadline(now: i64, ttl_millis: i64) -> f64 {
    const MAX_DATE_MILLIS: f64 = 8.64e15;
    ((now / 1_000_000) as f64 + ttl_millis as f64).min(MAX_DATE_MILLIS)
}

/// The code of a stored bucket that was read but cannot be decoded.
const STORAGE_CORRUPT: &str = "STORAGE_CORRUPT";

/// Whether `error` says the stored bucket itself is bad, which no retry mends (as opposed to
/// storage failing to answer).
fn is_undecodable(error: &ApiError) -> bool {
    error.code == STORAGE_CORRUPT
}

fn failed(error: &ApiError) -> (u16, String) {
    (error.status, error.body())
}

fn storage(error: worker::Error) -> ApiError {
    ApiError::new(500, "STORAGE_ERROR", format!("storage failed: {error}"))
}

fn js_storage(error: JsValue) -> ApiError {
    storage(worker::Error::from(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_alarm_write_is_forgotten_unless_a_later_one_replaced_it() {
        let alarm_at = Cell::new(Some(5_000.0));
        forget_alarm(&alarm_at, Some(5_000.0));
        assert_eq!(alarm_at.get(), None);
        let moved_earlier = Cell::new(Some(3_000.0));
        forget_alarm(&moved_earlier, Some(5_000.0));
        assert_eq!(moved_earlier.get(), Some(3_000.0));
    }

    #[test]
    fn only_an_undecodable_bucket_is_deleted_by_the_alarm() {
        assert!(is_undecodable(&ApiError::new(500, STORAGE_CORRUPT, "bad bytes")));
        let passing = storage(worker::Error::RustError("SQLITE_BUSY".into()));
        assert_eq!(passing.code, "STORAGE_ERROR");
        assert!(!is_undecodable(&passing));
    }
}
