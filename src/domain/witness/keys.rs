//! The witness's Ed25519 keys (ring, the crypto provider TLS already uses), kept as PEM files any
//! tool reads: the private key as PKCS#8 (`PRIVATE KEY`), the public one as SubjectPublicKeyInfo
//! (`PUBLIC KEY`), so `openssl pkey -pubin -in FILE.pub -text` shows what fencewatch uses.

use super::WitnessError;
use base64::Engine as _;
use ring::signature::{Ed25519KeyPair, KeyPair, UnparsedPublicKey, ED25519};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{PrivatePkcs8KeyDer, SubjectPublicKeyInfoDer};

/// The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): the 32 key bytes follow.
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// A key that signs checkpoints.
pub struct SigningKey {
    pair: Ed25519KeyPair,
}

impl std::fmt::Debug for SigningKey {
    /// The public half only: the private key never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public().to_hex())
            .finish()
    }
}

/// A key that checks them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    bytes: [u8; 32],
}

/// A new key pair, as the PEM texts of its private and public halves.
pub struct GeneratedKey {
    pub private_pem: String,
    pub public_pem: String,
}

impl SigningKey {
    /// A fresh key pair from the system's random source.
    pub fn generate() -> Result<GeneratedKey, WitnessError> {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng)
            .map_err(|_| WitnessError::Key("the system gave no randomness for a key".into()))?;
        let key = Self::from_pkcs8(pkcs8.as_ref())?;
        Ok(GeneratedKey {
            private_pem: pem("PRIVATE KEY", pkcs8.as_ref()),
            public_pem: key.public().to_pem(),
        })
    }

    /// The key in a PEM file's text.
    pub fn from_pem(text: &[u8]) -> Result<Self, WitnessError> {
        let der = PrivatePkcs8KeyDer::from_pem_slice(text)
            .map_err(|e| WitnessError::Key(format!("not a PEM PKCS#8 private key ({e})")))?;
        Self::from_pkcs8(der.secret_pkcs8_der())
    }

    fn from_pkcs8(der: &[u8]) -> Result<Self, WitnessError> {
        // `maybe_unchecked` also takes PKCS#8 v1 documents (what `openssl genpkey` writes),
        // which leave the public key out.
        Ed25519KeyPair::from_pkcs8_maybe_unchecked(der)
            .map(|pair| Self { pair })
            .map_err(|e| WitnessError::Key(format!("not an Ed25519 private key ({e})")))
    }

    pub fn public(&self) -> PublicKey {
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(self.pair.public_key().as_ref());
        PublicKey { bytes }
    }

    pub fn sign(&self, message: &[u8]) -> String {
        hex::encode(self.pair.sign(message).as_ref())
    }
}

impl PublicKey {
    /// The key in a PEM file's text.
    pub fn from_pem(text: &[u8]) -> Result<Self, WitnessError> {
        let der = SubjectPublicKeyInfoDer::from_pem_slice(text)
            .map_err(|e| WitnessError::Key(format!("not a PEM public key ({e})")))?;
        let der: &[u8] = der.as_ref();
        match der.strip_prefix(&ED25519_SPKI_PREFIX[..]) {
            Some(key) if key.len() == 32 => {
                let mut bytes = [0u8; 32];
                bytes.copy_from_slice(key);
                Ok(Self { bytes })
            }
            _ => Err(WitnessError::Key("not an Ed25519 public key".into())),
        }
    }

    /// The key as 64 hex digits: how a checkpoint names the key that signed it.
    pub fn to_hex(&self) -> String {
        hex::encode(self.bytes)
    }

    pub fn to_pem(&self) -> String {
        let mut der = ED25519_SPKI_PREFIX.to_vec();
        der.extend_from_slice(&self.bytes);
        pem("PUBLIC KEY", &der)
    }

    /// Whether `signature` (hex) is this key's signature of `message`.
    pub fn verifies(&self, message: &[u8], signature: &str) -> bool {
        let Ok(signature) = hex::decode(signature) else {
            return false;
        };
        UnparsedPublicKey::new(&ED25519, &self.bytes)
            .verify(message, &signature)
            .is_ok()
    }
}

/// `der` as a PEM section with this label, in 64-column lines.
fn pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut text = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        text.push_str(&String::from_utf8_lossy(line));
        text.push('\n');
    }
    text.push_str(&format!("-----END {label}-----\n"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_signs_what_its_public_half_verifies() {
        let generated = SigningKey::generate().unwrap();
        let key = SigningKey::from_pem(generated.private_pem.as_bytes()).unwrap();
        let public = PublicKey::from_pem(generated.public_pem.as_bytes()).unwrap();
        assert_eq!(key.public(), public);
        let signature = key.sign(b"checkpoint");
        assert!(public.verifies(b"checkpoint", &signature));
        assert!(!public.verifies(b"checkpoinT", &signature));
        let other = SigningKey::generate().unwrap();
        let other = PublicKey::from_pem(other.public_pem.as_bytes()).unwrap();
        assert!(!other.verifies(b"checkpoint", &signature));
        assert!(!public.verifies(b"checkpoint", "zz"));
    }

    #[test]
    fn key_files_of_the_wrong_kind_are_refused() {
        let generated = SigningKey::generate().unwrap();
        assert!(SigningKey::from_pem(generated.public_pem.as_bytes()).is_err());
        assert!(PublicKey::from_pem(generated.private_pem.as_bytes()).is_err());
        assert!(SigningKey::from_pem(b"not a key").is_err());
    }

    #[test]
    fn the_debug_form_shows_no_private_key() {
        let generated = SigningKey::generate().unwrap();
        let key = SigningKey::from_pem(generated.private_pem.as_bytes()).unwrap();
        let shown = format!("{key:?}");
        assert!(shown.contains(&key.public().to_hex()));
        let body: String = generated.private_pem.lines().nth(1).unwrap().into();
        assert!(!shown.contains(&body));
    }
}
