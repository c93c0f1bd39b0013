import Foundation

/// How an ``HTTPClient`` trusts HTTPS servers and which certificate it presents.
///
/// With nothing set, the system trust store checks the server's chain and its host name
/// (libcurl's defaults). ``pinnedCertificate`` accepts exactly that certificate and
/// ``acceptOnlySelfSigned`` any self-signed one (both skip the host-name check, as Couchbase Lite
/// does); ``trustedRoots`` replaces the system store with those certificates. An expired server
/// certificate is refused in every mode.
struct HTTPClientTLS: Sendable, Equatable {
    /// The server's certificate, DER: any other certificate fails the handshake.
    var pinnedCertificate: Data?
    /// The server's certificate by its SHA-256 (lowercase hex): any other fails the handshake.
    var pinnedFingerprint: String?
    /// Accept a self-signed server certificate (whatever its key) and nothing else.
    var acceptOnlySelfSigned = false
    /// Root certificates (DER) to trust instead of the system's.
    var trustedRoots: [Data]?
    /// The certificate and key presented when the server asks for one.
    var clientCertificatePEM: Data?
    var clientKeyPEM: Data?

    var checksCertificateItself: Bool { pinnedCertificate != nil || pinnedFingerprint != nil || acceptOnlySelfSigned }
}
