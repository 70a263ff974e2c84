//! The route table: every route of the service, with the role it needs and its handler.
//! [`router`](super::router) is built from [`ROUTES`] and nothing else, and
//! [`serve`](super::serve)'s token check reads the role of the route axum matched from the
//! same rows ([`access`]), so a route cannot be served without a role: one that reached the
//! router some other way has no row, and is refused whatever the token (fail closed).

use super::auth::{self, Access, Role};
use super::{
    activities, batches, builds, feed, flow, health, messages, metrics, purge, queues, repair,
    runs, schedules, streams, ui, Api,
};
use axum::http::Method;
use axum::routing::{on, MethodFilter, MethodRouter};

/// A route's HTTP method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    Get,
    Post,
    Delete,
}

impl Verb {
    /// The method as axum routes it (`GET` answers `HEAD` too).
    pub fn filter(self) -> MethodFilter {
        match self {
            Verb::Get => MethodFilter::GET,
            Verb::Post => MethodFilter::POST,
            Verb::Delete => MethodFilter::DELETE,
        }
    }

    /// `GET`, `POST`, `DELETE`.
    #[cfg(test)]
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::Post => "POST",
            Verb::Delete => "DELETE",
        }
    }

    /// Whether a request's method is this one (`HEAD` is a `GET`).
    fn is(self, method: &Method) -> bool {
        match self {
            Verb::Get => method == Method::GET || method == Method::HEAD,
            Verb::Post => method == Method::POST,
            Verb::Delete => method == Method::DELETE,
        }
    }
}

/// One row of the table.
pub(crate) struct Route {
    pub verb: Verb,
    /// The path pattern, in axum's syntax (`/{type}/runs/{id}`).
    pub path: &'static str,
    pub access: Access,
    /// Builds the route's handler for its method (and path: the web view's files).
    pub handler: fn(MethodFilter, &'static str) -> MethodRouter<Api>,
}

const fn route(
    verb: Verb,
    path: &'static str,
    access: Access,
    handler: fn(MethodFilter, &'static str) -> MethodRouter<Api>,
) -> Route {
    Route {
        verb,
        path,
        access,
        handler,
    }
}

use Access::Public;
use Verb::{Delete, Get, Post};
const READ: Access = Access::Needs(Role::Read);
const WRITE: Access = Access::Needs(Role::Write);
const ADMIN: Access = Access::Needs(Role::Admin);

/// Every route, with the role it needs. A route added to the service is a row here.
#[rustfmt::skip]
pub(crate) const ROUTES: &[Route] = &[
    route(Get, "/healthz", Public, |m, _| on(m, health::healthz)),
    route(Get, "/readyz", Public, |m, _| on(m, health::readyz)),
    route(Get, "/_whoami", READ, |m, _| on(m, auth::whoami)),
    route(Get, "/metrics", READ, |m, _| on(m, metrics::metrics)),
    route(Get, "/{type}", READ, |m, _| on(m, runs::describe_type)),
    route(Post, "/{type}/runs", WRITE, |m, _| on(m, messages::start)),
    route(Get, "/{type}/runs", READ, |m, _| on(m, runs::list)),
    route(Get, "/{type}/runs/{id}", READ, |m, _| on(m, runs::describe)),
    route(Get, "/{type}/runs/{id}/history", READ, |m, _| on(m, runs::history)),
    route(Get, "/{type}/runs/{id}/result", READ, |m, _| on(m, runs::result)),
    route(Post, "/{type}/runs/{id}/signal", WRITE, |m, _| on(m, messages::signal)),
    route(Post, "/{type}/runs/{id}/update", WRITE, |m, _| on(m, messages::update)),
    route(Get, "/{type}/runs/{id}/updates/{update_id}", READ, |m, _| on(m, runs::wait_update)),
    route(Post, "/{type}/runs/{id}/query", READ, |m, _| on(m, messages::query)),
    route(Get, "/{type}/runs/{id}/streams", READ, |m, _| on(m, streams::list)),
    route(Get, "/{type}/runs/{id}/streams/{name}", READ, |m, _| on(m, streams::stream)),
    route(Get, "/{type}/runs/{id}/published/{key}", READ, |m, _| on(m, streams::published)),
    route(Post, "/{type}/runs/{id}/cancel", WRITE, |m, _| on(m, runs::cancel)),
    route(Post, "/{type}/runs/{id}/terminate", ADMIN, |m, _| on(m, runs::terminate)),
    route(Post, "/{type}/runs/{id}/move", ADMIN, |m, _| on(m, builds::move_run)),
    route(Post, "/{type}/runs/{id}/reset", ADMIN, |m, _| on(m, repair::reset)),
    route(Post, "/{type}/runs/{id}/fork", ADMIN, |m, _| on(m, repair::fork)),
    route(Post, "/{type}/runs/{id}/resume", ADMIN, |m, _| on(m, repair::resume)),
    route(Delete, "/{type}/runs/{id}", ADMIN, |m, _| on(m, repair::delete)),
    route(Post, "/{type}/runs/{id}/pause", ADMIN, |m, _| on(m, runs::pause)),
    route(Post, "/{type}/runs/{id}/unpause", ADMIN, |m, _| on(m, runs::unpause)),
    route(Get, "/_count", READ, |m, _| on(m, runs::count)),
    route(Get, "/_events", READ, |m, _| on(m, feed::events)),
    route(Get, "/_schedules", READ, |m, _| on(m, schedules::list)),
    route(Post, "/_schedules/{id}", ADMIN, |m, _| on(m, schedules::create)),
    route(Get, "/_schedules/{id}", READ, |m, _| on(m, schedules::describe)),
    route(Delete, "/_schedules/{id}", ADMIN, |m, _| on(m, schedules::delete)),
    route(Post, "/_schedules/{id}/{action}", ADMIN, |m, _| on(m, schedules::change)),
    route(Post, "/_purge", ADMIN, |m, _| on(m, purge::purge)),
    route(Post, "/_batches", ADMIN, |m, _| on(m, batches::start)),
    route(Get, "/_batches", READ, |m, _| on(m, batches::list)),
    route(Get, "/_batches/{id}", READ, |m, _| on(m, batches::describe)),
    route(Post, "/_batches/{id}/cancel", ADMIN, |m, _| on(m, batches::cancel)),
    route(Get, "/_builds", READ, |m, _| on(m, builds::list)),
    route(Post, "/_builds/current", ADMIN, |m, _| on(m, builds::set_current)),
    route(Get, "/_flow_limits", READ, |m, _| on(m, flow::list)),
    route(Get, "/_flow_limits/usage", READ, |m, _| on(m, flow::usage)),
    route(Post, "/_flow_limits", ADMIN, |m, _| on(m, flow::set)),
    route(Delete, "/_flow_limits/{scope_kind}/{name}/{limit_kind}", ADMIN, |m, _| on(m, flow::remove)),
    route(Get, "/_workflow_queues", READ, |m, _| on(m, queues::list)),
    route(Get, "/_workflow_queues/usage", READ, |m, _| on(m, queues::usage)),
    route(Post, "/_workflow_queues", ADMIN, |m, _| on(m, queues::set)),
    route(Delete, "/_workflow_queues/{name}", ADMIN, |m, _| on(m, queues::remove)),
    route(Post, "/_activities/poll", WRITE, |m, _| on(m, activities::poll)),
    route(Post, "/_activities/{action}", WRITE, |m, _| on(m, activities::respond)),
    route(Get, "/ui", Public, |m, _| on(m, ui::to_slash)),
    route(Get, "/ui/types", READ, |m, _| on(m, ui::types)),
    route(Get, "/ui/", Public, ui::asset),
    route(Get, "/ui/app.js", Public, ui::asset),
    route(Get, "/ui/run.js", Public, ui::asset),
    route(Get, "/ui/streams.js", Public, ui::asset),
    route(Get, "/ui/ops.js", Public, ui::asset),
    route(Get, "/ui/app.css", Public, ui::asset),
    route(Get, "/ui/favicon.svg", Public, ui::asset),
];

/// What a request needs, given its method and the path pattern axum matched (`None` when no
/// route matched). `None` back: the matched route has no row, and nobody may use it.
///
/// A request that matched no route, or a route's path with another method, needs a known
/// token of any role: an anonymous caller learns nothing (401), a known one gets 404 or 405.
pub(crate) fn access(method: &Method, matched: Option<&str>) -> Option<Access> {
    let Some(matched) = matched else {
        return Some(READ);
    };
    let mut rows = ROUTES.iter().filter(|r| r.path == matched).peekable();
    rows.peek()?;
    Some(rows.find(|r| r.verb.is(method)).map_or(READ, |r| r.access))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_method_and_path_has_one_row() {
        for (i, a) in ROUTES.iter().enumerate() {
            for b in &ROUTES[i + 1..] {
                assert!(
                    !(a.verb == b.verb && a.path == b.path),
                    "{} {} twice",
                    a.verb.as_str(),
                    a.path
                );
            }
        }
    }

    #[test]
    fn every_row_is_found_by_its_method_and_path() {
        for r in ROUTES {
            let method = Method::from_bytes(r.verb.as_str().as_bytes()).unwrap();
            assert_eq!(access(&method, Some(r.path)), Some(r.access), "{}", r.path);
        }
        assert_eq!(access(&Method::HEAD, Some("/metrics")), Some(READ));
    }

    #[test]
    fn unknown_routes_fail_closed_and_unmatched_requests_need_a_token() {
        assert_eq!(access(&Method::GET, Some("/not-in-the-table")), None);
        assert_eq!(access(&Method::GET, None), Some(READ));
        // A known path with another method: 405 for a known caller.
        assert_eq!(access(&Method::PUT, Some("/healthz")), Some(READ));
        assert_eq!(access(&Method::GET, Some("/_purge")), Some(READ));
    }

    /// The paths the router registered (from its `Debug` output, which lists them): the
    /// table's, and no other.
    #[tokio::test]
    async fn the_router_serves_exactly_the_tables_paths() {
        let engine = wf_core::Engine::builder()
            .memory()
            .build()
            .await
            .expect("engine");
        let shown = format!("{:?}", super::super::router(&engine));
        engine.shutdown().await;
        let (_, rest) = shown
            .split_once("paths: {")
            .expect("axum's Router lists its paths");
        // The quoted strings up to the map's closing brace (braces inside quotes are the
        // paths' own: `{type}`).
        let mut registered: Vec<&str> = Vec::new();
        let mut open_quote: Option<usize> = None;
        for (i, c) in rest.char_indices() {
            match (c, open_quote) {
                ('"', None) => open_quote = Some(i + 1),
                ('"', Some(start)) => {
                    registered.push(&rest[start..i]);
                    open_quote = None;
                }
                ('}', None) => break,
                _ => {}
            }
        }
        registered.sort_unstable();
        let mut table: Vec<&str> = ROUTES.iter().map(|r| r.path).collect();
        table.sort_unstable();
        table.dedup();
        assert!(!registered.is_empty(), "no paths found in {shown}");
        assert_eq!(
            registered, table,
            "every route the router serves needs a row"
        );
    }

    #[test]
    fn only_health_readiness_and_the_web_views_files_are_public() {
        let public: Vec<&str> = ROUTES
            .iter()
            .filter(|r| r.access == Public)
            .map(|r| r.path)
            .collect();
        let mut expected = vec!["/healthz", "/readyz", "/ui"];
        expected.extend(ui::asset_paths());
        assert_eq!(public, expected);
    }

    /// The roles table of docs/guide/tokens-and-roles.md lists every route with the role the
    /// server enforces, so that operators read what is true.
    #[test]
    fn the_deploying_guide_lists_every_route_with_its_role() {
        let doc = include_str!("../../../docs/guide/tokens-and-roles.md");
        let (_, section) = doc
            .split_once("## Which route needs which role")
            .expect("the guide has its routes section");
        let section = section.split("\n## ").next().unwrap_or(section);
        let mut listed = Vec::new();
        for line in section.lines() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if cells.len() < 4 || !cells[1].starts_with('`') {
                continue;
            }
            let Some(route) = cells[1].strip_prefix('`').and_then(|c| c.strip_suffix('`')) else {
                continue;
            };
            if let Some((verb, path)) = route.split_once(' ') {
                listed.push((verb.to_string(), path.to_string(), cells[2].to_string()));
            }
        }
        for r in ROUTES {
            let role = match r.access {
                Public => "none".to_string(),
                Access::Needs(role) => role.as_str().to_string(),
            };
            let row = (r.verb.as_str().to_string(), r.path.to_string(), role);
            assert!(
                listed.contains(&row),
                "docs/guide/tokens-and-roles.md has no row `| `{} {}` | {} |`",
                row.0,
                row.1,
                row.2
            );
        }
        assert_eq!(
            listed.len(),
            ROUTES.len(),
            "rows for routes that do not exist: {listed:?}"
        );
    }
}
