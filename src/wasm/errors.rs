//! Errors as JS sees them: an `EdgeBucketError` whose `code` is the Rust [`Error::code`].
//!
//! The JS package registers its `EdgeBucketError` class once ([`set_error_class`]), so errors
//! thrown from Rust are instances of the very class users import. Hot operations do not throw:
//! they leave the error here and return [`STATUS_ERROR`](super::exchange::STATUS_ERROR); the JS
//! side then throws [`take_error`].

use std::cell::RefCell;

use js_sys::{Array, Function, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::Error;

/// An error of the bindings: the core's, or a JS argument the core never sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingError {
    /// A rule of the core was broken.
    Core(Error),
    /// A JS argument of the wrong type or form (`INVALID_ARGUMENT`), such as a fraction of a
    /// token, `NaN`, or an unknown strategy name.
    InvalidArgument(String),
}

impl BindingError {
    /// The stable code: [`Error::code`], or `INVALID_ARGUMENT`.
    pub fn code(&self) -> &'static str {
        match self {
            BindingError::Core(error) => error.code(),
            BindingError::InvalidArgument(_) => "INVALID_ARGUMENT",
        }
    }

    /// The message. Where the core's names a Rust option, it names the JS one instead.
    pub fn message(&self) -> String {
        match self {
            BindingError::Core(Error::KeySpaceFull { max_bytes }) => format!(
                "the store's keys fill its key space of {max_bytes} bytes; remove keys, lower maxKeys or raise maxKeyBytes"
            ),
            BindingError::Core(error) => error.to_string(),
            BindingError::InvalidArgument(message) => message.clone(),
        }
    }
}

/// The message of a serde-wasm-bindgen error: its JS `Error`'s message (`String(error)` would
/// put `Error: ` in front), or a value that a getter threw, as [`shown`] writes it.
pub(crate) fn serde_message(error: serde_wasm_bindgen::Error) -> String {
    let value = JsValue::from(error);
    match value.dyn_ref::<js_sys::Error>() {
        Some(error) => error.message().into(),
        None => shown(&value),
    }
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_name = String)]
    fn js_string(value: &JsValue) -> Result<String, JsValue>;
}

/// `value` for an error message: a string as it is, a function by that name, anything else as
/// JSON writes it, or as `String` does where JSON cannot (`undefined`, a BigInt, a symbol), or
/// else by its type.
pub(crate) fn shown(value: &JsValue) -> String {
    if let Some(text) = value.as_string() {
        return text;
    }
    if value.is_function() {
        return "a function".into(); // not its source
    }
    let json = js_sys::JSON::stringify(value).ok().and_then(|json| json.as_string());
    json.or_else(|| js_string(value).ok())
        .unwrap_or_else(|| format!("a value of type {}", value.js_typeof().as_string().unwrap_or_default()))
}

impl From<Error> for BindingError {
    fn from(error: Error) -> Self {
        BindingError::Core(error)
    }
}

impl From<BindingError> for JsValue {
    fn from(error: BindingError) -> Self {
        to_js(&error)
    }
}

thread_local! {
    static ERROR_CLASS: RefCell<Option<Function>> = const { RefCell::new(None) };
    static PENDING: RefCell<Option<BindingError>> = const { RefCell::new(None) };
}

/// Registers the JS class errors are made of: `new Class(code, message)`.
#[wasm_bindgen(js_name = setErrorClass)]
pub fn set_error_class(class: Function) {
    ERROR_CLASS.with(|c| *c.borrow_mut() = Some(class));
}

/// The error a hot operation left (see the module docs), as a JS error to throw.
#[wasm_bindgen(js_name = takeError)]
pub fn take_error() -> JsValue {
    let error = PENDING.with(|p| p.borrow_mut().take());
    let error = error.unwrap_or_else(|| BindingError::InvalidArgument("no pending error".into()));
    to_js(&error)
}

/// Leaves `error` for [`take_error`].
pub(crate) fn leave(error: BindingError) {
    super::exchange::clear_given();
    PENDING.with(|p| *p.borrow_mut() = Some(error));
}

fn to_js(error: &BindingError) -> JsValue {
    super::exchange::clear_given();
    let args = Array::of2(&error.code().into(), &error.message().into());
    let made = ERROR_CLASS.with(|c| c.borrow().as_ref().map(|class| Reflect::construct(class, &args)));
    match made {
        Some(Ok(value)) => value,
        // Not registered (the raw module used directly): a plain Error with the code.
        _ => {
            let plain: JsValue = js_sys::Error::new(&error.message()).into();
            let _ = Reflect::set(&plain, &"code".into(), &error.code().into());
            plain
        }
    }
}
