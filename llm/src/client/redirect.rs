//! The redirect policy: a request follows redirects only within its origin.

/// Redirects followed at most, within the endpoint's origin.
const MAX_REDIRECTS: usize = 5;

/// A redirect to another origin, refused: names that origin.
#[derive(Debug)]
pub(super) struct CrossOrigin(pub(super) String);

impl std::fmt::Display for CrossOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a redirect to another origin ({})", self.0)
    }
}

impl std::error::Error for CrossOrigin {}

/// The redirect policy: follow a redirect only within the origin (scheme,
/// host and port) of the first request, since the request body is the
/// prompt, which holds trace content.
pub(super) fn same_origin_only(
    attempt: reqwest::redirect::Attempt<'_>,
) -> reqwest::redirect::Action {
    let first = attempt.previous().first().map(reqwest::Url::origin);
    let next = attempt.url().origin();
    if first.as_ref() != Some(&next) {
        return attempt.error(CrossOrigin(next.ascii_serialization()));
    }
    if attempt.previous().len() > MAX_REDIRECTS {
        return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
    }
    attempt.follow()
}
