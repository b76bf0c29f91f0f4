//! Who may call what: `Authorization: Bearer <token>` against the secrets `ADMIN_TOKEN` (admin
//! endpoints and metrics) and `API_KEY` (service endpoints; the admin token works there too).
//! Checked before anything else, so a refused call changes nothing.
//!
//! Without either secret the service endpoints are disabled, not open: a worker's hostname is
//! public, and an open service API lets anyone run any caller's bucket into debt (`ignore-limits`
//! has no bound but overflow) or pin a key to another policy (`POLICY_MISMATCH` ever after).

use sha2::{Digest, Sha256};

use super::errors::ApiError;

/// What an endpoint needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Consume and reserve.
    Service,
    /// Inspect, replace, reset, delete, policies, metrics.
    Admin,
}

/// The configured secrets, kept as SHA-256 digests: a check hashes the presented token once and
/// compares digests in constant time, so the secrets are not hashed again per request.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// `ADMIN_TOKEN`; without it the admin endpoints are disabled.
    admin_token: Option<Digest32>,
    /// `API_KEY`; without it (and without `admin_token`) the service endpoints are disabled.
    api_key: Option<Digest32>,
}

type Digest32 = [u8; 32];

impl Secrets {
    /// `ADMIN_TOKEN` and `API_KEY`, each optional.
    pub fn new(admin_token: Option<&str>, api_key: Option<&str>) -> Self {
        Secrets { admin_token: admin_token.map(digest), api_key: api_key.map(digest) }
    }

    /// Whether `authorization` (the header's value) grants `role`.
    ///
    /// # Errors
    /// 401 `UNAUTHORIZED` without a bearer token, 403 `FORBIDDEN` with a wrong one, 403
    /// `ADMIN_DISABLED` for admin endpoints when no `ADMIN_TOKEN` is set, 403 `SERVICE_DISABLED`
    /// for service endpoints when neither `API_KEY` nor `ADMIN_TOKEN` is.
    pub fn check(&self, role: Role, authorization: Option<&str>) -> Result<(), ApiError> {
        if self.accepted(role).next().is_none() {
            return Err(match role {
                Role::Service => ApiError::new(
                    403,
                    "SERVICE_DISABLED",
                    "set the API_KEY secret to use service endpoints (locally: .dev.vars or --var API_KEY:…)",
                ),
                Role::Admin => ApiError::new(
                    403,
                    "ADMIN_DISABLED",
                    "set the ADMIN_TOKEN secret to use admin endpoints (locally: .dev.vars or --var ADMIN_TOKEN:…)",
                ),
            });
        }
        let Some(token) = authorization.and_then(bearer_token) else {
            return Err(ApiError::new(401, "UNAUTHORIZED", "send Authorization: Bearer <token>"));
        };
        if self.grants(role, token) {
            Ok(())
        } else {
            Err(ApiError::new(403, "FORBIDDEN", "the token does not grant this endpoint"))
        }
    }

    /// Whether an `Authorization` value carries one of these secrets as its bearer token: a
    /// token the service endpoints take (`API_KEY` or `ADMIN_TOKEN`). Two `Authorization` lines
    /// arrive joined by a comma, which no bearer token holds (RFC 6750's `b64token`), nor a secret
    /// (the settings refuse one that does): each part is checked.
    pub fn is_secret(&self, authorization: &str) -> bool {
        authorization.split(',').any(|part| bearer_token(part).is_some_and(|token| self.grants(Role::Service, token)))
    }

    /// The secrets that grant `role`: the admin token grants both.
    fn accepted(&self, role: Role) -> impl Iterator<Item = &Digest32> {
        let api_key = match role {
            Role::Service => self.api_key.as_ref(),
            Role::Admin => None,
        };
        api_key.into_iter().chain(self.admin_token.as_ref())
    }

    fn grants(&self, role: Role, token: &str) -> bool {
        let token = digest(token);
        self.accepted(role).any(|secret| constant_time_eq(secret, &token))
    }
}

/// Shows which secrets are set, never their digests.
impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("admin_token", &self.admin_token.is_some())
            .field("api_key", &self.api_key.is_some())
            .finish()
    }
}

/// An `Authorization` value's scheme and credential: the scheme ends at a space or tab, and
/// further spaces and tabs are skipped, as are those around the value (HTTP's whitespace,
/// nothing else: a byte such as 0xA0 arrives as a Unicode space, and trimming it would turn a
/// credential of that byte into an empty one; `wrangler dev` hands values over with trailing
/// spaces kept). `None` without a separator. One reading for the role check, the worker's own
/// secrets and the gateway's `apiKey` buckets, so they cannot disagree on a spelling.
pub fn scheme_and_credential(header: &str) -> Option<(&str, &str)> {
    let (scheme, credential) = header.trim_matches([' ', '\t']).split_once([' ', '\t'])?;
    Some((scheme, credential.trim_start_matches([' ', '\t'])))
}

/// The token of `Bearer <token>`; the scheme is case-insensitive (RFC 9110 §11.1). No token is
/// `None`.
pub fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = scheme_and_credential(header)?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn digest(text: &str) -> Digest32 {
    Sha256::digest(text.as_bytes()).into()
}

/// Compares two digests every byte: timing reveals neither a common prefix nor the secret's
/// length (digests of the token and the secret, not the texts, are compared).
fn constant_time_eq(a: &Digest32, b: &Digest32) -> bool {
    a.iter().zip(b.iter()).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(admin: Option<&str>, api: Option<&str>) -> Secrets {
        Secrets::new(admin, api)
    }

    #[test]
    fn the_worker_knows_its_own_secrets() {
        let s = secrets(Some("root"), Some("svc"));
        assert!(s.is_secret("Bearer root") && s.is_secret("bearer  svc"));
        assert!(!s.is_secret("Bearer other") && !s.is_secret("root") && !s.is_secret("Basic svc"));
        assert!(!secrets(None, None).is_secret("Bearer x"));
        assert!(s.is_secret("Bearer\troot"), "the scheme ends at a tab as it does for apiKey buckets");
        // Two lines, joined: either may carry it.
        assert!(s.is_secret("Bearer root, Bearer x") && s.is_secret("Bearer x,Bearer svc"));
        assert!(!s.is_secret("Bearer x, Bearer y") && s.is_secret("Bearer root,"));
        assert_eq!(format!("{s:?}"), "Secrets { admin_token: true, api_key: true }", "no digest in logs");
    }

    #[test]
    fn admin_needs_the_admin_token() {
        let s = secrets(Some("root"), Some("svc"));
        assert_eq!(s.check(Role::Admin, Some("Bearer root")), Ok(()));
        assert_eq!(s.check(Role::Admin, Some("bearer root")), Ok(()), "the scheme is case-insensitive");
        assert_eq!(s.check(Role::Admin, Some("Bearer rootx")).unwrap_err().code, "FORBIDDEN");
        assert_eq!(s.check(Role::Admin, None).unwrap_err().status, 401);
        assert_eq!(s.check(Role::Admin, Some("root")).unwrap_err().code, "UNAUTHORIZED");
        assert_eq!(s.check(Role::Admin, Some("Bearer svc")).unwrap_err().code, "FORBIDDEN");
        assert_eq!(s.check(Role::Admin, Some("Bearer roo")).unwrap_err().status, 403);
        assert_eq!(secrets(None, None).check(Role::Admin, Some("Bearer x")).unwrap_err().code, "ADMIN_DISABLED");
        assert_eq!(s.check(Role::Admin, Some("Bearer  \troot")), Ok(()), "spaces and tabs separate");
        assert_eq!(s.check(Role::Admin, Some("Bearer ")).unwrap_err().code, "UNAUTHORIZED", "no token");
        // Spaces and tabs around the value are HTTP's, not the token's (wrangler dev keeps them).
        assert_eq!(s.check(Role::Admin, Some("Bearer root \t")), Ok(()));
        assert_eq!(s.check(Role::Admin, Some(" Bearer root")), Ok(()));
        assert!(s.is_secret("Bearer root  "), "never forwarded to the origin");
    }

    #[test]
    fn a_unicode_space_is_part_of_the_token_never_trimmed_into_an_empty_one() {
        assert_eq!(bearer_token("Bearer \u{a0}"), Some("\u{a0}"));
        assert_eq!(bearer_token("Bearer \u{85}"), Some("\u{85}"));
        let empty = secrets(Some(""), None); // settings never make one (an empty secret is unset)
        assert_eq!(empty.check(Role::Admin, Some("Bearer \u{a0}")).unwrap_err().code, "FORBIDDEN");
    }

    #[test]
    fn service_is_disabled_without_secrets_and_takes_either_token() {
        let none = secrets(None, None).check(Role::Service, None).unwrap_err();
        assert_eq!((none.status, none.code.as_ref()), (403, "SERVICE_DISABLED"));
        assert_eq!(secrets(None, None).check(Role::Service, Some("Bearer x")).unwrap_err().code, "SERVICE_DISABLED");
        let admin_only = secrets(Some("root"), None);
        assert_eq!(admin_only.check(Role::Service, Some("Bearer root")), Ok(()), "the admin token serves too");
        assert_eq!(admin_only.check(Role::Service, None).unwrap_err().code, "UNAUTHORIZED");
        let s = secrets(Some("root"), Some("svc"));
        assert_eq!(s.check(Role::Service, Some("Bearer svc")), Ok(()));
        assert_eq!(s.check(Role::Service, Some("Bearer root")), Ok(()));
        assert_eq!(s.check(Role::Service, None).unwrap_err().status, 401);
        assert_eq!(s.check(Role::Service, Some("Bearer nope")).unwrap_err().status, 403);
    }
}
