//! The Jupyter kernel: ixmap in notebooks, `jupyter console` and nbconvert.
//!
//! It speaks the Jupyter messaging protocol v5.3 over ZeroMQ. The transport is the
//! `zeromq` crate, a pure-Rust implementation of ZMTP on tokio (the one evcxr_jupyter and
//! nteract's runtimelib use): no libzmq, no C toolchain and no system package, so `cargo
//! build` alone gives a working kernel on a fresh machine and in CI. The protocol layer on
//! top is small and ours ([`message`]): framing, HMAC-SHA256 signing of every message sent
//! and verification of every message received (`hmac` + `sha2`, constant-time compare); a
//! message with a bad signature is dropped and logged, never executed. We did not take
//! `jupyter-protocol`/`runtimelib`: they bring a larger dependency tree and typed message
//! structs we would mostly pass through as JSON anyway.
//!
//! Layout: [`connection`] (the connection file), [`message`] (wire format, signing),
//! [`engine`] (what requests do: execute, complete, inspect, is_complete, history — no
//! sockets, unit-tested), [`server`] (sockets, loops, the engine thread, interrupts),
//! [`install`] (the kernelspec). Values are rendered by [`crate::render`] as text/plain,
//! text/html, text/latex (maps) and image/svg+xml (plots).
//!
//! ```text
//! $ ixmap kernel install --user          # writes ~/.local/share/jupyter/kernels/ixmap
//! $ jupyter console --kernel ixmap
//! In [1]: m = (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4]
//! ```
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod connection;
pub mod engine;
pub mod install;
pub mod message;
pub mod server;

pub use connection::Connection;
pub use engine::Engine;

/// Runs the kernel for a connection file until Jupyter shuts it down.
pub fn run(connection_file: &std::path::Path) -> Result<(), String> {
    let conn = Connection::read(connection_file)?;
    server::run(conn)
}
