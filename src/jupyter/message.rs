//! Jupyter wire messages: framing, HMAC-SHA256 signing and verification.
//!
//! On the wire (messaging protocol v5.3) a message is a list of ZeroMQ frames:
//!
//! ```text
//! [routing ids...] "<IDS|MSG>" signature header parent_header metadata content [buffers...]
//! ```
//!
//! `signature` is the hex HMAC-SHA256 of the four JSON frames under the connection file's
//! key. Every message sent is signed, and every message received is verified (in constant
//! time) before it is parsed: a message whose signature does not match is rejected with
//! [`WireError::BadSignature`] and the server drops it.

use hmac::{KeyInit, Mac};
use serde_json::{json, Value as Json};

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The frame that separates routing identities from the message proper.
pub const DELIMITER: &[u8] = b"<IDS|MSG>";
/// The protocol version this kernel speaks.
pub const PROTOCOL_VERSION: &str = "5.3";

/// Why a received frame list is not a message we accept.
#[derive(Debug, PartialEq, Eq)]
pub enum WireError {
    NoDelimiter,
    MissingFrames,
    BadSignature,
    BadJson(String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::NoDelimiter => write!(f, "no <IDS|MSG> delimiter frame"),
            WireError::MissingFrames => write!(f, "fewer than the 5 frames after the delimiter"),
            WireError::BadSignature => write!(f, "bad signature"),
            WireError::BadJson(e) => write!(f, "invalid JSON: {e}"),
        }
    }
}

/// Signs and verifies messages with the connection's key. An empty key disables signing
/// (the protocol allows it): signatures are then empty and not checked.
#[derive(Clone)]
pub struct Signer {
    key: Vec<u8>,
}

impl Signer {
    pub fn new(key: &str) -> Signer {
        Signer {
            key: key.as_bytes().to_vec(),
        }
    }

    fn mac(&self, parts: &[&[u8]]) -> Option<HmacSha256> {
        if self.key.is_empty() {
            return None;
        }
        let mut mac =
            HmacSha256::new_from_slice(&self.key).expect("HMAC accepts keys of any length");
        for p in parts {
            mac.update(p);
        }
        Some(mac)
    }

    /// Hex signature of the four JSON frames.
    pub fn sign(&self, parts: &[&[u8]]) -> String {
        match self.mac(parts) {
            Some(mac) => hex::encode(mac.finalize().into_bytes()),
            None => String::new(),
        }
    }

    /// Whether `signature` (hex) signs the frames; constant-time in the comparison.
    pub fn verify(&self, parts: &[&[u8]], signature: &[u8]) -> bool {
        match self.mac(parts) {
            None => true,
            Some(mac) => match hex::decode(signature) {
                Ok(tag) => mac.verify_slice(&tag).is_ok(),
                Err(_) => false,
            },
        }
    }
}

/// One message, decoded.
#[derive(Clone, Debug)]
pub struct Message {
    /// Routing identities (ROUTER sockets), sent back with the reply.
    pub identities: Vec<Vec<u8>>,
    pub header: Json,
    pub parent_header: Json,
    pub metadata: Json,
    pub content: Json,
    pub buffers: Vec<Vec<u8>>,
}

impl Message {
    pub fn msg_type(&self) -> &str {
        self.header["msg_type"].as_str().unwrap_or("")
    }

    /// Verifies and decodes a frame list.
    pub fn decode(frames: Vec<Vec<u8>>, signer: &Signer) -> Result<Message, WireError> {
        let at = frames
            .iter()
            .position(|f| f == DELIMITER)
            .ok_or(WireError::NoDelimiter)?;
        let mut rest = frames.into_iter();
        let identities: Vec<Vec<u8>> = rest.by_ref().take(at).collect();
        rest.next(); // the delimiter
        let body: Vec<Vec<u8>> = rest.collect();
        if body.len() < 5 {
            return Err(WireError::MissingFrames);
        }
        let parts: [&[u8]; 4] = [&body[1], &body[2], &body[3], &body[4]];
        if !signer.verify(&parts, &body[0]) {
            return Err(WireError::BadSignature);
        }
        let parse = |b: &[u8]| -> Result<Json, WireError> {
            serde_json::from_slice(b).map_err(|e| WireError::BadJson(e.to_string()))
        };
        Ok(Message {
            identities,
            header: parse(&body[1])?,
            parent_header: parse(&body[2])?,
            metadata: parse(&body[3])?,
            content: parse(&body[4])?,
            buffers: body[5..].to_vec(),
        })
    }

    /// The signed frame list.
    pub fn encode(&self, signer: &Signer) -> Vec<Vec<u8>> {
        let header = self.header.to_string().into_bytes();
        let parent = self.parent_header.to_string().into_bytes();
        let metadata = self.metadata.to_string().into_bytes();
        let content = self.content.to_string().into_bytes();
        let signature = signer.sign(&[&header, &parent, &metadata, &content]);
        let mut frames = self.identities.clone();
        frames.push(DELIMITER.to_vec());
        frames.push(signature.into_bytes());
        frames.extend([header, parent, metadata, content]);
        frames.extend(self.buffers.iter().cloned());
        frames
    }

    /// A new message of `msg_type` in reply to (or caused by) `parent`.
    pub fn child(parent: &Message, msg_type: &str, content: Json) -> Message {
        let session = parent.header["session"].as_str().unwrap_or("").to_string();
        let username = parent.header["username"]
            .as_str()
            .unwrap_or("ixmap")
            .to_string();
        Message {
            identities: parent.identities.clone(),
            header: header(msg_type, &session, &username),
            parent_header: parent.header.clone(),
            metadata: json!({}),
            content,
            buffers: vec![],
        }
    }

    /// The reply to `self`: `foo_request` → `foo_reply`, same routing identities.
    pub fn reply(&self, content: Json) -> Message {
        let t = self.msg_type();
        let reply_type = match t.strip_suffix("_request") {
            Some(stem) => format!("{stem}_reply"),
            None => format!("{t}_reply"),
        };
        Message::child(self, &reply_type, content)
    }
}

/// A fresh header (new msg_id, the current time in ISO 8601 with a UTC offset).
pub fn header(msg_type: &str, session: &str, username: &str) -> Json {
    json!({
        "msg_id": uuid::Uuid::new_v4().to_string(),
        "session": session,
        "username": username,
        "date": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "msg_type": msg_type,
        "version": PROTOCOL_VERSION,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(signer: &Signer) -> Vec<Vec<u8>> {
        let m = Message {
            identities: vec![b"client-1".to_vec()],
            header: header("execute_request", "s1", "me"),
            parent_header: json!({}),
            metadata: json!({}),
            content: json!({"code": "help"}),
            buffers: vec![],
        };
        m.encode(signer)
    }

    #[test]
    fn signed_messages_round_trip() {
        let signer = Signer::new("secret");
        let m = Message::decode(request(&signer), &signer).expect("a signed message decodes");
        assert_eq!(m.identities, vec![b"client-1".to_vec()]);
        assert_eq!(m.msg_type(), "execute_request");
        assert_eq!(m.content["code"], "help");
        let r = m.reply(json!({"status": "ok"}));
        assert_eq!(r.msg_type(), "execute_reply");
        assert_eq!(r.parent_header["msg_id"], m.header["msg_id"]);
    }

    #[test]
    fn signature_is_hmac_sha256_of_the_four_frames() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let signer = Signer::new("Jefe");
        assert_eq!(
            signer.sign(&[b"what do ya want ", b"for nothing?"]),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn wrong_key_or_tampered_content_is_rejected() {
        let good = Signer::new("secret");
        let frames = request(&Signer::new("another key"));
        assert_eq!(
            Message::decode(frames, &good).unwrap_err(),
            WireError::BadSignature
        );
        let mut frames = request(&good);
        let last = frames.len() - 1;
        frames[last] = br#"{"code": "evil"}"#.to_vec();
        assert_eq!(
            Message::decode(frames, &good).unwrap_err(),
            WireError::BadSignature
        );
        let mut frames = request(&good);
        frames[2] = b"not hex".to_vec();
        assert_eq!(
            Message::decode(frames, &good).unwrap_err(),
            WireError::BadSignature
        );
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        let s = Signer::new("k");
        assert_eq!(
            Message::decode(vec![b"x".to_vec()], &s).unwrap_err(),
            WireError::NoDelimiter
        );
        assert_eq!(
            Message::decode(vec![DELIMITER.to_vec(), b"sig".to_vec()], &s).unwrap_err(),
            WireError::MissingFrames
        );
    }
}
