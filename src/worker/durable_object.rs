//! One Durable Object per bucket key (`idFromName(key)`): the single place a bucket lives, so
//! every request for the key, wherever it lands, sees one consistent bucket.
//!
//! - The bucket is read from SQLite storage once, kept in memory, and decided on at `Date.now()`.
//! - A decision that changes the bucket writes it (one synchronous SQL statement) before the
//!   answer leaves: the output gate holds the answer until the write is durable. A decision that
//!   changes nothing writes nothing, except a refused reservation whose retry time lies beyond
//!   the bucket's idle deadline, which moves the deadline (see [`decide::Effect`]).
//! - Decisions never await between reading and writing the bucket, so they are serialized
//!   without locks.
//! - The bucket's row: [`bucket_row`](super::bucket_row); the alarm that deletes an idle bucket:
//!   [`idle_alarm`](super::idle_alarm).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

// The #[durable_object] expansion names `wasm_bindgen`.
use worker::wasm_bindgen::{self, prelude::wasm_bindgen, JsValue};
use worker::wasm_bindgen_futures::{future_to_promise, JsFuture};
use worker::{durable_object, js_sys, Env, Request, Response, State};

use super::bucket_row::{is_undecodable, BucketRow};
use super::client::{js_millis, now_nanos};
use super::decide::{self, Held};
use super::errors::ApiError;
use super::idle_alarm::{AlarmWrite, IdleAlarm};
use super::log::IdleAlarmLine;
use super::protocol::{round_up, Command, Deleted, MILLISECOND};
use super::respond;
use super::settings;

/// The latest time a JavaScript `Date` holds, in epoch milliseconds.
const MAX_DATE_MILLIS: f64 = 8.64e15;

/// Grace for a bucket whose policy has gone from the configuration.
const DEFAULT_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// The Durable Object class that holds one bucket (`class_name = "BucketObject"`).
#[durable_object]
pub struct BucketObject {
    state: State,
    env: Env,
    /// `None` until read from storage. Shared with a pending deletion, which forgets it if
    /// storage could not be cleared.
    held: Rc<RefCell<Option<Option<Held>>>>,
    /// When the bucket may be deleted, epoch milliseconds (kept in storage too).
    idle_until: Cell<f64>,
    /// The alarm that deletes the bucket once idle.
    alarm: IdleAlarm,
    /// The bucket's row in storage.
    row: BucketRow,
}

impl worker::DurableObject for BucketObject {
    fn new(state: State, env: Env) -> Self {
        BucketObject {
            row: BucketRow::new(state.storage().sql()),
            state,
            env,
            held: Rc::new(RefCell::new(None)),
            idle_until: Cell::new(0.0),
            alarm: IdleAlarm::default(),
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
        self.alarm.clear();
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
            Ok(command) => self.decide(&command).unwrap_or_else(|error| self.refused(error)),
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
        let (needed, slack) = self.promised_until(&settings, effect.promised_nanos, now);
        let moves_deadline = needed > self.idle_until.get();
        if !effect.changed && !moves_deadline {
            return Ok(pair((200, body)));
        }
        // A deadline moved for a promise goes `slack` further than needed: a caller whose
        // refusals name a later moment each time then writes once per grace, not per refusal.
        let keep_until = if moves_deadline { (needed + slack).min(MAX_DATE_MILLIS) } else { needed };
        // A promise made before still holds unless the schedule it was made for restarted.
        let keep_until = if effect.keeps_promises { keep_until.max(self.idle_until.get()) } else { keep_until };
        if let Err(error) = self.persist(&settings, now, keep_until) {
            if effect.changed {
                return Err(error);
            }
            // Only the deadline was to move: the refusal stands, and must not become the
            // policy's failure mode (an admission, failing open).
            worker::console_error!("idle deadline not moved: {} {}", error.code, error.message);
            return Ok(pair((200, body)));
        }
        // The decision is durable: answer it even if the idle alarm could not be set (the next
        // write tries again). A 500 here would send the front worker into its failure mode for
        // tokens already spent.
        match self.alarm.schedule(&self.state, self.idle_until.get()) {
            Ok(None) => Ok(pair((200, body))),
            Ok(Some(write)) => Ok(after_alarm(write, body)),
            Err(error) => {
                worker::console_error!("idle alarm not set: {} {}", error.code, error.message);
                Ok(pair((200, body)))
            }
        }
    }

    /// `DELETE`: `[200, {"deleted": …}]` once storage is cleared.
    fn delete_command(&self) -> JsValue {
        let (existed, cleared) = match self.start_delete() {
            Ok(started) => started,
            Err(error) => return pair(failed(&error)),
        };
        let held = Rc::clone(&self.held);
        after(cleared, move |result| match result {
            Ok(_) => match serde_json::to_string(&Deleted { deleted: existed }) {
                Ok(body) => (200, body),
                Err(e) => failed(&ApiError::internal(e.to_string())),
            },
            Err(error) => {
                forget(&held);
                failed(&ApiError::storage(error))
            }
        })
    }

    /// `[status, problem]` for a command that failed. A stored bucket that cannot be decoded also
    /// sets the alarm for now, which deletes it: else every request until its idle deadline (up
    /// to a year away) would get the policy's failure mode, admitted without limit when it fails
    /// open, refused when it fails closed. Losing the row hands the key a fresh bucket: at most
    /// one capacity given back, against no limit at all.
    fn refused(&self, error: ApiError) -> JsValue {
        if !is_undecodable(&error) {
            return pair(failed(&error));
        }
        match self.alarm.schedule(&self.state, js_millis() as f64) {
            Ok(Some(write)) => after(write.written.clone(), move |result| {
                if let Err(alarm) = result {
                    write.failed();
                    worker::console_error!("alarm for an unreadable bucket not set: {}", describe(&alarm));
                }
                failed(&error)
            }),
            Ok(None) => pair(failed(&error)),
            Err(alarm) => {
                worker::console_error!("alarm for an unreadable bucket not set: {} {}", alarm.code, alarm.message);
                pair(failed(&error))
            }
        }
    }

    /// Reads the bucket on first use. Reading never creates storage: an unknown key stays free.
    fn load(&self) -> Result<(), ApiError> {
        if self.held.borrow().is_some() {
            return Ok(());
        }
        let stored = self.row.read()?;
        let held = stored.map(|stored| {
            self.idle_until.set(stored.idle_until);
            stored.held
        });
        *self.held.borrow_mut() = Some(held);
        Ok(())
    }

    /// When a bucket that promised a retry in `promised_nanos` may be deleted at the earliest
    /// (epoch milliseconds): the promise plus the policy's grace; 0 when nothing was promised.
    /// Beside it, the slack to add when the deadline must move: the grace, at least a second.
    fn promised_until(&self, settings: &settings::Settings, promised_nanos: i64, now: i64) -> (f64, f64) {
        let held = self.held.borrow();
        let Some(Some(held)) = held.as_ref().filter(|_| promised_nanos > 0) else { return (0.0, 0.0) };
        let grace = grace(settings, held);
        let keep = promised_nanos.saturating_add(duration_nanos(grace));
        let needed = idle_deadline(now, round_up(keep, MILLISECOND).unwrap_or(i64::MAX));
        (needed, grace.max(std::time::Duration::from_secs(1)).as_millis() as f64)
    }

    /// Writes the bucket and its idle deadline, which is at least `promised_until`; on failure
    /// forgets the in-memory copy so the next request reads what storage really holds.
    fn persist(&self, settings: &settings::Settings, now: i64, promised_until: f64) -> Result<(), ApiError> {
        let written = {
            let held = self.held.borrow();
            let held = held.as_ref().and_then(Option::as_ref).expect("a changed bucket exists");
            let expiry = held.bucket.idle_expiry_nanos(decide::idle_keep(grace(settings, held)), now);
            let ttl_millis = round_up(expiry, MILLISECOND).unwrap_or(i64::MAX);
            let idle_until = idle_deadline(now, ttl_millis).max(promised_until);
            self.row.write(&held.policy, &held.encode(), idle_until).map(|()| idle_until)
        };
        match written {
            Ok(idle_until) => {
                self.idle_until.set(idle_until);
                Ok(())
            }
            Err(error) => {
                *self.held.borrow_mut() = None;
                Err(error)
            }
        }
    }

    /// The alarm for `at_millis`, written and awaited (the alarm handler's way): a failed write
    /// is forgotten and fails the handler, which the runtime retries.
    async fn set_alarm(&self, at_millis: f64) -> Result<(), ApiError> {
        let write = self.alarm.write(&self.state, at_millis)?;
        JsFuture::from(write.written.clone()).await.map(|_| ()).map_err(|error| {
            write.failed();
            ApiError::storage(error)
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
        let until = self.idle_until.get();
        let kept = (js_millis() as f64) < until;
        if kept {
            self.set_alarm(until).await?;
        } else {
            self.delete().await?;
        }
        if settings::load(&self.env).is_ok_and(|s| s.log_decisions) {
            let outcome = if kept { "kept" } else { "deleted" };
            let key = self.state.id().name();
            IdleAlarmLine { event: "idle-alarm", key, outcome, until_ms: kept.then_some(until) }.emit();
        }
        Ok(())
    }

    /// Deletes everything the object stores.
    async fn delete(&self) -> Result<(), ApiError> {
        let (_, cleared) = self.start_delete()?;
        JsFuture::from(cleared).await.map(|_| ()).map_err(|error| {
            forget(&self.held);
            ApiError::storage(error)
        })
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
        self.alarm.clear();
        self.row.forget();
        let storage = self.state.as_raw().storage().map_err(ApiError::storage)?;
        Ok((existed, storage.delete_all().map_err(ApiError::storage)?))
    }
}

/// Forgets the in-memory bucket after storage failed to clear: the bucket may still be stored,
/// and a fresh one in memory would overwrite it with its next write (and refund its tokens).
fn forget(held: &RefCell<Option<Option<Held>>>) {
    *held.borrow_mut() = None;
}

/// `[200, body]` once the alarm `write` settles; a failed write is logged and forgotten (unless
/// a later write replaced it), so the next decision that writes the bucket sets it again.
fn after_alarm(write: AlarmWrite, body: String) -> JsValue {
    after(write.written.clone(), move |result| {
        if let Err(error) = result {
            write.failed();
            worker::console_error!("idle alarm not set: {}", describe(&error));
        }
        (200, body)
    })
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

/// How long `held` is kept once full: its policy's grace, or [`DEFAULT_GRACE`] when the policy
/// has gone from the configuration.
fn grace(settings: &settings::Settings, held: &Held) -> std::time::Duration {
    settings.policies.get(&held.policy).map_or(DEFAULT_GRACE, |p| p.idle_grace)
}

/// `duration` in nanoseconds, [`i64::MAX`] beyond.
fn duration_nanos(duration: std::time::Duration) -> i64 {
    i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX)
}

/// `now` (ns) plus `ttl_millis`, in epoch milliseconds, within what a JavaScript `Date` holds.
fn idle_deadline(now: i64, ttl_millis: i64) -> f64 {
    ((now / 1_000_000) as f64 + ttl_millis as f64).min(MAX_DATE_MILLIS)
}

fn failed(error: &ApiError) -> (u16, String) {
    (error.status, error.body())
}
