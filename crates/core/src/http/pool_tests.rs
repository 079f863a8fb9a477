//! The HTTP/2 pool against the loopback server over TLS: stream limits, ALPN, `GOAWAY`, dial failures.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::join_all;
use http::{Request, Response, StatusCode, Version};
use http_body_util::{BodyExt as _, Full};
use tokio::sync::mpsc;

use super::client::HttpClient;
use super::server::{LoopbackServer, ResponseBody, ServerOptions, ServerTls, empty_response};
use crate::Error;
use crate::http_settings::{HttpOptions, HttpVersion};

const WAIT: Duration = Duration::from_secs(10);

/// Event streams the server holds open: dropping a sender ends its stream.
type Open = Arc<Mutex<Vec<mpsc::Sender<Result<Bytes, std::io::Error>>>>>;

/// `/events` answers an event stream that stays open (one event first); anything else, 204.
async fn server(tls: ServerTls, max_streams: Option<u32>) -> (LoopbackServer, Open) {
    let open: Open = Arc::default();
    let held = Arc::clone(&open);
    let options = ServerOptions::default().tls(Some(tls)).max_concurrent_streams(max_streams);
    let server = LoopbackServer::start_with(options, move |request| {
        let held = Arc::clone(&held);
        async move {
            if request.uri.path() != "/events" {
                return empty_response(StatusCode::NO_CONTENT);
            }
            let (sender, body) = ResponseBody::channel();
            sender.try_send(Ok(Bytes::from_static(b"data: {}\n\n"))).unwrap();
            held.lock().unwrap().push(sender);
            let mut response = Response::new(body);
            response.headers_mut().insert(http::header::CONTENT_TYPE, "text/event-stream".parse().unwrap());
            response
        }
    })
    .await
    .unwrap();
    (server, open)
}

fn trusting(server: &LoopbackServer, options: HttpOptions) -> HttpClient {
    HttpClient::with_root_certificates(&options, &[server.certificate_der().unwrap()]).unwrap()
}

fn get(server: &LoopbackServer, path: &str) -> Request<Full<Bytes>> {
    Request::get(format!("{}{path}", server.base_url())).body(Full::default()).unwrap()
}

#[tokio::test]
async fn ten_event_streams_on_a_server_allowing_three_take_four_connections_and_requests_still_pass() {
    let (server, open) = server(ServerTls::Http2AndHttp1, Some(3)).await;
    let client = trusting(&server, HttpOptions::new());
    let streams = join_all((0..10).map(|_| client.send(get(&server, "/events"), WAIT))).await;
    let mut bodies = Vec::new();
    for stream in streams {
        let response = stream.expect("every stream opens");
        assert_eq!(response.version(), Version::HTTP_2);
        let mut body = response.into_body();
        let first = tokio::time::timeout(WAIT, body.frame()).await.expect("an event").expect("a frame").unwrap();
        assert_eq!(first.into_data().unwrap(), Bytes::from_static(b"data: {}\n\n"));
        bodies.push(body);
    }
    assert_eq!(open.lock().unwrap().len(), 10);
    assert_eq!((server.connections(), client.http2_connections()), (4, 4), "⌈10 / 3⌉ connections");
    // Short requests share the two free streams of the fourth connection (they queue rather than dial).
    let ping = || async {
        let response = client.send(get(&server, "/ping"), WAIT).await?;
        let status = response.status();
        response.into_body().collect().await.map_err(|error| Error::transport("body", error))?;
        Ok::<_, Error>(status)
    };
    let pings = join_all((0..6).map(|_| ping())).await;
    assert!(pings.iter().all(|ping| matches!(ping, Ok(StatusCode::NO_CONTENT))), "{pings:?}");
    assert_eq!(server.connections(), 4);
    // An eleventh and twelfth stream fill the fourth connection; the thirteenth opens a fifth.
    for _ in 0..3 {
        bodies.push(client.send(get(&server, "/events"), WAIT).await.unwrap().into_body());
    }
    assert_eq!(server.connections(), 5);
    // Streams that end give their place back: the next ones need no new connection.
    bodies.truncate(5);
    open.lock().unwrap().clear();
    for _ in 0..3 {
        bodies.push(client.send(get(&server, "/events"), WAIT).await.unwrap().into_body());
    }
    assert_eq!(server.connections(), 5);
}

#[tokio::test]
async fn alpn_picks_http2_where_the_server_offers_it_and_http1_where_it_does_not() {
    for (tls, version) in [(ServerTls::Http2AndHttp1, Version::HTTP_2), (ServerTls::Http1Only, Version::HTTP_11)] {
        let (server, _open) = server(tls, None).await;
        let client = trusting(&server, HttpOptions::new());
        for _ in 0..3 {
            let response = client.send(get(&server, "/ping"), WAIT).await.unwrap();
            assert_eq!((response.status(), response.version()), (StatusCode::NO_CONTENT, version), "{tls:?}");
        }
        // HTTP/2: one connection for everything; HTTP/1.1: the dial that learnt it, then pooled HTTP/1.1.
        assert_eq!(server.connections(), if version == Version::HTTP_2 { 1 } else { 2 }, "{tls:?}");
        let http1 = trusting(&server, HttpOptions::new().version(HttpVersion::Http1Only));
        let response = http1.send(get(&server, "/ping"), WAIT).await.unwrap();
        assert_eq!(response.version(), Version::HTTP_11, "Http1Only never offers h2");
    }
}

#[tokio::test]
async fn a_goaway_sends_new_requests_to_a_new_connection_and_cuts_the_old_streams_after_its_grace() {
    let (server, _open) = server(ServerTls::Http2AndHttp1, None).await;
    let client = trusting(&server, HttpOptions::new());
    let mut stream = client.send(get(&server, "/events"), WAIT).await.unwrap().into_body();
    assert!(stream.frame().await.unwrap().is_ok(), "the first event");
    assert_eq!(server.connections(), 1);
    let closed = server.go_away(Duration::from_millis(100));
    // The stream carries on until the grace ends, then breaks as a dropped HTTP/1.1 stream does.
    let broken = tokio::time::timeout(WAIT, stream.frame()).await.expect("the stream is cut");
    assert!(matches!(broken, Some(Err(_))), "{broken:?}");
    tokio::time::timeout(WAIT, closed).await.expect("the server says the connection closed");
    let response = client.send(get(&server, "/ping"), WAIT).await.unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!((server.connections(), client.http2_connections()), (2, 1));
}

#[tokio::test]
async fn every_request_waiting_on_a_refused_dial_fails_with_its_cause() {
    let client = HttpClient::with_options(&HttpOptions::new().version(HttpVersion::Http2PriorKnowledge)).unwrap();
    let request = || Request::get("http://127.0.0.1:1/v1/x?key=secret").body(Full::default()).unwrap();
    let outcomes = join_all((0..20).map(|_| client.send(request(), WAIT))).await;
    for outcome in outcomes {
        let Err(Error::Connect { message, .. }) = outcome else { panic!("not a connect error: {outcome:?}") };
        assert_eq!(message.to_string(), "http://127.0.0.1:1/v1/x: connection refused");
    }
}

#[tokio::test]
async fn a_certificate_nobody_trusts_is_refused_and_so_are_unusable_roots() {
    let (server, _open) = server(ServerTls::Http2AndHttp1, None).await;
    let webpki = HttpClient::with_options(&HttpOptions::new()).unwrap();
    let refused = webpki.send(get(&server, "/ping"), WAIT).await;
    assert!(matches!(refused, Err(Error::Connect { .. })), "{refused:?}");
    let none: [&[u8]; 0] = [];
    for roots in [&none[..], &[b"not a certificate".as_slice()][..]] {
        let built = HttpClient::with_root_certificates(&HttpOptions::new(), roots);
        assert!(matches!(built, Err(Error::InvalidOption { option: "root_certificates", .. })), "{built:?}");
    }
}

#[tokio::test]
async fn without_idle_connections_kept_a_connection_closes_with_its_last_stream() {
    let (server, _open) = server(ServerTls::Http2AndHttp1, None).await;
    let client = trusting(&server, HttpOptions::new().max_idle_per_host(0));
    let response = client.send(get(&server, "/ping"), WAIT).await.unwrap();
    response.into_body().collect().await.unwrap();
    tokio::time::timeout(WAIT, client.http2_all_closed()).await.expect("the idle connection closes");
    assert_eq!(client.http2_connections(), 0);
    // The next request dials again.
    let response = client.send(get(&server, "/ping"), WAIT).await.unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(server.connections(), 2);
}
