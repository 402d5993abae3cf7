//! The HTTP/1 server loop, with the timeouts `axum::serve` does not set.
//!
//! - [`HEADER_READ_TIMEOUT`] (10 s): hyper's header read timeout. It runs whenever a connection
//!   waits for a request's headers, so it closes both slow senders (slowloris) and keep-alive
//!   connections idle that long between requests.
//! - [`REQUEST_TIMEOUT`] (30 s): a middleware ([`request_timeout`]) that answers `503` when a request
//!   (reading its body and the handler) takes longer. A database call already running in the
//!   blocking pool finishes on its own; only the answer is given up.

use crate::error::WebError;
use crate::layers::error_response;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;
use tower::ServiceExt;

/// Time for a request's headers to arrive, and for a keep-alive connection to stay idle.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for a request, from its headers to its answer (see [`request_timeout`]).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// `503` when the request takes longer than the state's duration.
pub async fn request_timeout(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(res) => res,
        Err(_) => error_response(
            &path,
            WebError::TimedOut(format!(
                "the request took longer than {} s and was given up",
                limit.as_secs_f64()
            )),
        ),
    }
}

/// Serves `app` on `listener` until `shutdown` completes: each connection on its own task, its
/// peer address given to handlers as `ConnectInfo<SocketAddr>`, closed when headers take longer
/// than `header_read` ([`HEADER_READ_TIMEOUT`]). At shutdown no new connection is accepted; the
/// ones open end with the runtime.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    header_read: Duration,
    shutdown: impl Future<Output = ()>,
) {
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin or stop.
                    eprintln!("docket web: accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => return,
        };
        tokio::spawn(connection(stream, peer, app.clone(), header_read));
    }
}

async fn connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
    header_read: Duration,
) {
    let service = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        app.clone().oneshot(req.map(axum::body::Body::new))
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read)
        .serve_connection(TokioIo::new(stream), service)
        .await;
    // A client that goes away or times out is no server error: nothing to report.
    drop(served);
}
