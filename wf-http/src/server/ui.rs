//! The web view at `/ui/`: a runs list, a run page (status, input, result, history as a
//! timeline, pending work, queries, signal and update forms, cancel, terminate, pause,
//! unpause, resume and reset to a workflow task, the run's streams followed live), a batches page, a schedules page and a flow
//! limits page (each limit with the attempts running and waiting under it), in
//! plain HTML, CSS and JavaScript embedded in the binary, so that it works offline and needs
//! no build step.
//!
//! The page reads the same JSON routes as any client (relative URLs, so the view also works
//! when the router is nested under a prefix) and sends the bearer token it keeps in
//! `sessionStorage`. The static assets hold no run data and are served without the token;
//! the data routes, `GET /ui/types` included, stay behind it. The page asks `GET /_whoami`
//! for its token's role and shows only the controls that role may use.

use super::body::Codec;
use super::Api;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{on, MethodFilter, MethodRouter};
use serde_json::json;

/// What the pages may load: only this server's own scripts, styles and JSON. No inline
/// script or style, so that a value that slipped into the markup could not run.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// One embedded file of the web view.
struct Asset {
    /// Its path under the router's root.
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset {
        path: "/ui/",
        content_type: "text/html; charset=utf-8",
        body: include_bytes!("../../assets/index.html"),
    },
    Asset {
        path: "/ui/app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../assets/app.js"),
    },
    Asset {
        path: "/ui/run.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../assets/run.js"),
    },
    Asset {
        path: "/ui/streams.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../assets/streams.js"),
    },
    Asset {
        path: "/ui/ops.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../assets/ops.js"),
    },
    Asset {
        path: "/ui/app.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../assets/app.css"),
    },
    Asset {
        path: "/ui/favicon.svg",
        content_type: "image/svg+xml",
        body: include_bytes!("../../assets/favicon.svg"),
    },
];

/// The paths of the static files, which need no token (they hold no data; the page asks
/// for the token itself). Each has a row in the route table.
#[cfg(test)]
pub(crate) fn asset_paths() -> impl Iterator<Item = &'static str> {
    ASSETS.iter().map(|a| a.path)
}

/// The route of the static file at `path` (a route table row names it).
pub(crate) fn asset(method: MethodFilter, path: &'static str) -> MethodRouter<Api> {
    let asset = ASSETS
        .iter()
        .find(|a| a.path == path)
        .expect("the route table names only files of ASSETS (checked by a test)");
    on(method, move || async move { serve_asset(asset) })
}

fn serve_asset(asset: &'static Asset) -> Response {
    let mut response = (StatusCode::OK, asset.body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // A new binary may bring new assets: revalidate rather than run yesterday's script.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `GET /ui` -> `/ui/` (relative, so that it holds under a prefix too), where the page's
/// relative links resolve.
pub(crate) async fn to_slash() -> Response {
    (
        StatusCode::PERMANENT_REDIRECT,
        [(header::LOCATION, HeaderValue::from_static("ui/"))],
    )
        .into_response()
}

/// `GET /ui/types`: every type served, with its handlers (as `GET /{type}`), for the type
/// filter and the forms. Behind the token like the other data routes.
pub(crate) async fn types(State(api): State<Api>) -> Response {
    let mut types: Vec<_> = api.types().map(super::runs::type_json).collect();
    types.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Codec::Json.reply(200, &json!({ "types": types }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_its_own_files() {
        let html = std::str::from_utf8(ASSETS[0].body).expect("index.html is UTF-8");
        assert!(html.contains("src=\"app.js\""));
        assert!(html.contains("href=\"app.css\""));
        assert!(
            !html.contains("<script>"),
            "no inline script: the CSP forbids it"
        );
        assert!(!html.contains("http://") && !html.contains("https://"));
    }

    #[test]
    fn the_scripts_never_write_markup_from_strings() {
        let scripts: Vec<&Asset> = ASSETS.iter().filter(|a| a.path.ends_with(".js")).collect();
        assert_eq!(scripts.len(), 4);
        for script in scripts {
            let js = std::str::from_utf8(script.body).expect("scripts are UTF-8");
            for sink in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
                "new Function",
            ] {
                assert!(!js.contains(sink), "{} uses {sink}", script.path);
            }
        }
    }
}
