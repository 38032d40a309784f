//! The web app, embedded in the binary: the viewer needs no network and no
//! files beside the binary.

use super::http::Reply;

/// The app's files: name, content type, text.
const FILES: [(&str, &str, &str); 3] = [
    (
        "index.html",
        "text/html; charset=utf-8",
        include_str!("../../web/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/app.js"),
    ),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../../web/app.css"),
    ),
];

/// Whether the app has a file of this name.
pub fn has(name: &str) -> bool {
    FILES.iter().any(|(n, _, _)| *n == name)
}

/// The file as a reply (404 when there is none).
pub fn page(name: &str) -> Reply {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, text)) => Reply {
            status: 200,
            content_type,
            body: text.as_bytes().to_vec(),
        },
        None => super::http::ApiError::not_found(format!("no page /{name}")).reply(),
    }
}
