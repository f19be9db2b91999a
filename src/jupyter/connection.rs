//! The connection file Jupyter writes before starting a kernel: where to bind the five
//! sockets and the key to sign messages with.
//!
//! ```text
//! {"transport": "tcp", "ip": "127.0.0.1", "shell_port": 53794, "iopub_port": 53795,
//!  "stdin_port": 53796, "control_port": 53797, "hb_port": 53798,
//!  "key": "a0436f6c-...", "signature_scheme": "hmac-sha256", "kernel_name": "ixmap"}
//! ```

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
pub struct Connection {
    #[serde(default = "tcp")]
    pub transport: String,
    pub ip: String,
    pub shell_port: u16,
    pub iopub_port: u16,
    pub stdin_port: u16,
    pub control_port: u16,
    pub hb_port: u16,
    #[serde(default)]
    pub key: String,
    #[serde(default = "hmac_sha256")]
    pub signature_scheme: String,
}

fn tcp() -> String {
    "tcp".into()
}
fn hmac_sha256() -> String {
    "hmac-sha256".into()
}

impl Connection {
    /// Reads and checks a connection file.
    pub fn read(path: &std::path::Path) -> Result<Connection, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Connection::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Connection, String> {
        let c: Connection =
            serde_json::from_str(text).map_err(|e| format!("not a connection file: {e}"))?;
        if c.transport != "tcp" {
            return Err(format!(
                "transport `{}` is not supported (only tcp)",
                c.transport
            ));
        }
        if !c.key.is_empty() && c.signature_scheme != "hmac-sha256" {
            return Err(format!(
                "signature scheme `{}` is not supported (only hmac-sha256)",
                c.signature_scheme
            ));
        }
        Ok(c)
    }

    /// `tcp://IP:PORT`.
    pub fn endpoint(&self, port: u16) -> String {
        format!("{}://{}:{}", self.transport, self.ip, port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_jupyter_client_writes() {
        let c = Connection::parse(
            r#"{"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5,
                "ip": "127.0.0.1", "key": "k", "transport": "tcp", "signature_scheme": "hmac-sha256",
                "kernel_name": "ixmap"}"#,
        )
        .expect("valid connection file");
        assert_eq!(c.endpoint(c.hb_port), "tcp://127.0.0.1:5");
        assert!(Connection::parse(r#"{"ip": "x"}"#).is_err());
        let md5 = r#"{"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4,
                      "hb_port": 5, "ip": "127.0.0.1", "key": "k", "signature_scheme": "hmac-md5"}"#;
        assert!(Connection::parse(md5).unwrap_err().contains("hmac-md5"));
    }
}
