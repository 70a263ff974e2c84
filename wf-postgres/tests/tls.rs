//! TLS to PostgreSQL against real servers, each test's own (`ssl = on`, a `pg_hba.conf` that
//! rejects connections without TLS, certificates made when the test runs): `verify-full`
//! works in both forms of the connection string and through several hosts; an unknown CA, a
//! host name the certificate does not carry, an expired certificate, a server without TLS,
//! `sslmode=disable` and a missing client certificate are refused with messages that say why
//! and never show the password. Skipped (loudly) without PostgreSQL's binaries.

#[path = "tls/cluster.rs"]
mod cluster;

use cluster::{Ca, Cluster, ServerTls, CERT_USER, SCRAM_PASSWORD, SCRAM_USER};
use wf_core::store::conformance::{start, T0};
use wf_core::store::{BackendErrorKind, Store, StoreError};
use wf_postgres::{
    connect_raw, connect_raw_with, ClientCert, PostgresOptions, PostgresStore, PostgresTls,
    RootCerts, SslMode,
};

/// A password in every URL (the one SCRAM checks): no message may show it.
const PASSWORD: &str = SCRAM_PASSWORD;

/// A server whose certificate, from its own CA, names `names`; and that CA's file.
fn server(test: &str, names: &[&str]) -> Option<(Cluster, Ca, String)> {
    let ca = Ca::new("wf test CA");
    let identity = ca.server(names);
    let cluster = Cluster::start(
        test,
        Some(ServerTls {
            identity: &identity,
            client_ca: &ca,
        }),
    )?;
    let ca_file = cluster.client_file("ca.pem", &ca.pem());
    Some((cluster, ca, ca_file))
}

fn url(host: &str, cluster: &Cluster, params: &str) -> String {
    format!(
        "postgres://postgres:{PASSWORD}@{host}:{}/postgres?{params}",
        cluster.port()
    )
}

fn options(schema: &str) -> PostgresOptions {
    PostgresOptions {
        schema: schema.into(),
        writers: 1,
        readers: 1,
        ..Default::default()
    }
}

/// Opens a store at `url` and checks a write and a read go through.
async fn round_trip(url: &str, options: PostgresOptions) {
    let store = PostgresStore::connect_with(url, options)
        .await
        .unwrap_or_else(|e| panic!("open a store over TLS: {e}"));
    start(&store, "order-1", "run-1", T0).await;
    let run = store.get_run("order-1", None).await.expect("read back");
    assert!(run.is_some(), "the run written over TLS reads back");
}

/// The TLS version of a fresh connection at `url`, or `None` if it is not encrypted.
async fn tls_version(url: &str) -> Option<String> {
    let client = connect_raw(url)
        .await
        .unwrap_or_else(|e| panic!("connect_raw over TLS: {e}"));
    let row = client
        .query_one(
            "SELECT version FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl",
            &[],
        )
        .await;
    row.ok().map(|r| r.get(0))
}

/// The user a connection logged in as.
async fn current_user(client: &tokio_postgres::Client) -> String {
    let row = client.query_one("SELECT current_user::text", &[]).await;
    row.expect("query the user").get(0)
}

/// The error of opening a store at `url`, checked to hold no password.
async fn refusal(url: &str) -> (BackendErrorKind, String) {
    let e = match PostgresStore::connect_with(url, options("wf")).await {
        Ok(_) => panic!("{url} must be refused"),
        Err(e) => e,
    };
    let said = e.to_string();
    assert!(!said.contains(PASSWORD), "the password leaked: {said}");
    match e {
        StoreError::Backend(b) => (b.kind(), said),
        other => panic!("a backend error, not {other:?}"),
    }
}

#[tokio::test]
async fn verify_full_opens_a_store_over_tls() {
    let Some((cluster, _ca, ca_file)) = server("verify_full", &["localhost"]) else {
        return;
    };
    let url = url(
        "localhost",
        &cluster,
        &format!("sslmode=verify-full&sslrootcert={ca_file}"),
    );
    round_trip(&url, options("wf")).await;
    assert_eq!(tls_version(&url).await.as_deref(), Some("TLSv1.3"));
}

#[tokio::test]
async fn percent_encoded_settings_and_several_hosts_reach_the_server_over_tls() {
    let Some((cluster, _ca, ca_file)) = server("multi_host", &["localhost"]) else {
        return;
    };
    // The first host has nothing listening: tokio-postgres goes on to the second, whose
    // certificate is checked; both keys are percent-encoded.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!(
        "postgres://postgres:{PASSWORD}@localhost:{dead},localhost:{}/postgres?\
         target_session_attrs=read-write&ssl%6dode=verify-full&sslrootcert={}",
        cluster.port(),
        ca_file.replace('/', "%2F")
    );
    round_trip(&url, options("wf")).await;
}

#[tokio::test]
async fn the_key_value_form_works_and_code_settings_override_it() {
    let Some((cluster, ca, ca_file)) = server("key_value", &["localhost"]) else {
        return;
    };
    let kv = format!(
        "host=localhost port={} user=postgres password='{PASSWORD}' dbname=postgres \
         sslmode=verify-full sslrootcert='{ca_file}'",
        cluster.port()
    );
    round_trip(&kv, options("wf")).await;
    assert_eq!(tls_version(&kv).await.as_deref(), Some("TLSv1.3"));
    // The string says disable (refused by this server); the code's settings win.
    let disabled = format!(
        "host=localhost port={} user=postgres dbname=postgres sslmode=disable",
        cluster.port()
    );
    let tls = PostgresTls {
        mode: Some(SslMode::VerifyFull),
        root_certs: Some(RootCerts::Pem(ca.pem())),
        ..Default::default()
    };
    round_trip(
        &disabled,
        PostgresOptions {
            tls: tls.clone(),
            ..options("wf_code")
        },
    )
    .await;
    connect_raw_with(&disabled, &tls)
        .await
        .expect("connect_raw_with takes the code's settings too");
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_refused_as_unknown() {
    let Some((cluster, _ca, _)) = server("unknown_ca", &["localhost"]) else {
        return;
    };
    let other = cluster.client_file("other-ca.pem", &Ca::new("another CA").pem());
    for mode in ["verify-full", "verify-ca", "require"] {
        let (kind, said) = refusal(&url(
            "localhost",
            &cluster,
            &format!("sslmode={mode}&sslrootcert={other}"),
        ))
        .await;
        assert_eq!(kind, BackendErrorKind::Invalid, "{said}");
        assert!(
            said.contains("is not signed by any of the CAs in")
                && said.contains(&format!("{other} (sslrootcert) (unknown CA)")),
            "sslmode={mode}: {said}"
        );
    }
    // `require` without a root certificate encrypts and checks nothing (libpq's rule).
    let url = url("localhost", &cluster, "sslmode=require");
    assert_eq!(tls_version(&url).await.as_deref(), Some("TLSv1.3"));
}

#[tokio::test]
async fn a_host_name_the_certificate_does_not_carry_is_refused() {
    let Some((cluster, _ca, ca_file)) = server("name_mismatch", &["localhost"]) else {
        return;
    };
    let (kind, said) = refusal(&url(
        "127.0.0.1",
        &cluster,
        &format!("sslmode=verify-full&sslrootcert={ca_file}"),
    ))
    .await;
    assert_eq!(kind, BackendErrorKind::Invalid, "{said}");
    assert!(
        said.contains("not valid for the host name 127.0.0.1")
            && said.contains("(it is for localhost)")
            && said.contains("sslmode=verify-ca"),
        "{said}"
    );
    // verify-ca checks the chain only: the same URL connects.
    let url = url(
        "127.0.0.1",
        &cluster,
        &format!("sslmode=verify-ca&sslrootcert={ca_file}"),
    );
    assert_eq!(tls_version(&url).await.as_deref(), Some("TLSv1.3"));
}

#[tokio::test]
async fn an_expired_server_certificate_is_refused() {
    let ca = Ca::new("wf test CA");
    let identity = ca.expired_server(&["localhost"]);
    let tls = ServerTls {
        identity: &identity,
        client_ca: &ca,
    };
    let Some(cluster) = Cluster::start("expired", Some(tls)) else {
        return;
    };
    let ca_file = cluster.client_file("ca.pem", &ca.pem());
    let (kind, said) = refusal(&url(
        "localhost",
        &cluster,
        &format!("sslmode=verify-full&sslrootcert={ca_file}"),
    ))
    .await;
    assert_eq!(kind, BackendErrorKind::Invalid, "{said}");
    assert!(
        said.contains("the server's certificate expired at 2021-01-01T00:00:00Z"),
        "{said}"
    );
}

#[tokio::test]
async fn sslmode_disable_is_refused_by_a_server_that_requires_tls_saying_why() {
    let Some((cluster, _ca, _)) = server("disable", &["localhost"]) else {
        return;
    };
    let (kind, said) = refusal(&url("localhost", &cluster, "sslmode=disable")).await;
    assert_eq!(kind, BackendErrorKind::Invalid, "{said}");
    assert!(
        said.contains("no encryption")
            && said.contains("the server requires TLS")
            && said.contains("use sslmode=require or stronger"),
        "{said}"
    );
}

#[tokio::test]
async fn a_server_without_tls_is_refused_when_tls_is_required() {
    let Some(cluster) = Cluster::start("no_tls", None) else {
        return;
    };
    let (kind, said) = refusal(&url("localhost", &cluster, "sslmode=require")).await;
    assert_eq!(kind, BackendErrorKind::Invalid, "{said}");
    assert!(
        said.contains("the server does not support TLS") && said.contains("sslmode=require"),
        "{said}"
    );
    // prefer (the default) falls back to a plain connection.
    let url = url("localhost", &cluster, "application_name=plain");
    assert_eq!(tls_version(&url).await, None);
}

#[tokio::test]
async fn client_certificate_authentication_works_and_fails_clearly_without_one() {
    let Some((cluster, ca, ca_file)) = server("client_cert", &["localhost"]) else {
        return;
    };
    let port = cluster.port();
    let mine = ca.client(CERT_USER);
    let cert = cluster.client_file("client.crt", &mine.cert);
    let key = cluster.client_file("client.key", &mine.key);
    let base = format!(
        "postgres://{CERT_USER}:{PASSWORD}@localhost:{port}/postgres?sslmode=verify-full\
         &sslrootcert={ca_file}"
    );
    let with_cert = format!("{base}&sslcert={cert}&sslkey={key}");
    let client = connect_raw(&with_cert)
        .await
        .unwrap_or_else(|e| panic!("a client certificate signed by the server's CA: {e}"));
    assert_eq!(current_user(&client).await, CERT_USER);
    round_trip(&with_cert, options("wf")).await;

    // The same certificate given in code, as PEM.
    let in_code = PostgresTls {
        client_cert: Some(ClientCert::Pem {
            cert: mine.cert.clone(),
            key: mine.key.clone(),
        }),
        ..Default::default()
    };
    connect_raw_with(&base, &in_code)
        .await
        .expect("a client certificate given in code");

    let (kind, said) = refusal(&base).await;
    assert_eq!(kind, BackendErrorKind::Invalid, "{said}");
    assert!(
        said.contains("requires a client certificate") && said.contains("set sslcert and sslkey"),
        "{said}"
    );

    // A certificate from a CA the server does not trust: the server ends the handshake.
    let stranger = Ca::new("another CA").client(CERT_USER);
    let cert = cluster.client_file("stranger.crt", &stranger.cert);
    let key = cluster.client_file("stranger.key", &stranger.key);
    let (_, said) = refusal(&format!("{base}&sslcert={cert}&sslkey={key}")).await;
    assert!(
        said.contains(&format!(
            "the server refused the client certificate {cert} (sslcert)"
        )),
        "{said}"
    );
}

#[tokio::test]
async fn a_password_with_channel_binding_authenticates_over_tls() {
    let Some((cluster, _ca, ca_file)) = server("scram", &["localhost"]) else {
        return;
    };
    let url = format!(
        "postgres://{SCRAM_USER}:{PASSWORD}@localhost:{}/postgres?sslmode=verify-full\
         &sslrootcert={ca_file}&channel_binding=require",
        cluster.port()
    );
    // SCRAM-SHA-256-PLUS: the server checks the hash of its certificate the client sends.
    let client = connect_raw(&url)
        .await
        .unwrap_or_else(|e| panic!("SCRAM with channel binding over TLS: {e}"));
    assert_eq!(current_user(&client).await, SCRAM_USER);
    let wrong = "wr0ng-Pa55";
    let e = connect_raw(&url.replace(PASSWORD, wrong))
        .await
        .expect_err("a wrong password is refused");
    let said = e.to_string();
    assert!(said.contains("password authentication failed"), "{said}");
    assert!(!said.contains(wrong) && !said.contains(PASSWORD), "{said}");
}

#[tokio::test]
async fn unreadable_tls_files_are_named() {
    // No server needed: the files are read before connecting.
    let dir = std::env::temp_dir().join(format!("wf-pgtls-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let garbage = dir.join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    let url = format!(
        "postgres://u:{PASSWORD}@localhost:1/db?sslmode=verify-full&sslrootcert={}",
        garbage.display()
    );
    let e = PostgresStore::connect(&url).await.err().expect("refused");
    let said = e.to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        said.contains(&format!(
            "{} (sslrootcert) holds no certificate",
            garbage.display()
        )),
        "{said}"
    );
    assert!(!said.contains(PASSWORD), "{said}");
    let e = PostgresStore::connect(&format!(
        "host=localhost user=u password={PASSWORD} sslmode=require sslcert=/nonexistent/c.pem \
         sslkey=/nonexistent/k.pem"
    ))
    .await
    .err()
    .expect("refused");
    let said = e.to_string();
    assert!(
        said.contains("cannot read /nonexistent/c.pem (sslcert)"),
        "{said}"
    );
    assert!(!said.contains(PASSWORD), "{said}");
}
