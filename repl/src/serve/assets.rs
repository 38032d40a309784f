//! The web app, embedded in the binary: the viewer needs no network and no
//! files beside the binary.

use super::http::Reply;

/// The app's files: name, content type, text. The script is ES modules, each served on its own;
/// `app.js` is the one the page loads, and it imports the others.
const FILES: [(&str, &str, &str); 19] = [
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
        "api.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/api.js"),
    ),
    (
        "routes.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/routes.js"),
    ),
    (
        "dom.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/dom.js"),
    ),
    (
        "shell.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/shell.js"),
    ),
    (
        "categories.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/categories.js"),
    ),
    (
        "traces-page.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/traces-page.js"),
    ),
    (
        "trace-page.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/trace-page.js"),
    ),
    (
        "node-links.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/node-links.js"),
    ),
    (
        "case-page.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/case-page.js"),
    ),
    (
        "graph-model.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/graph-model.js"),
    ),
    (
        "graph-fold.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/graph-fold.js"),
    ),
    (
        "graph-layout.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/graph-layout.js"),
    ),
    (
        "graph-view.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/graph-view.js"),
    ),
    (
        "graph-explorer.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/graph-explorer.js"),
    ),
    (
        "graph-page.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/graph-page.js"),
    ),
    (
        "query-page.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/query-page.js"),
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
