import Foundation
import Testing

@testable import Couchette

/// HTTPS over loopback: the listener's TLS (civetweb) against the libcurl client's checks —
/// pinned, self-signed only, trusted roots, the system store — and client certificates.
@Suite(.serialized, .tags(.concurrency)) struct TLSListenerTests {
    /// Runs `body` with a started HTTPS listener on `db`'s default collection.
    private func withTLSListener(
        _ db: Database, configure: (inout URLEndpointListenerConfiguration) -> Void = { _ in },
        _ body: (URLEndpointListener, String) async throws -> Void
    ) async throws {
        var config = URLEndpointListenerConfiguration(collections: [try db.defaultCollection()])
        configure(&config)
        let listener = URLEndpointListener(config: config)
        #expect(listener.tlsIdentity == nil)  // nil before start
        try await listener.start()
        do {
            try await body(listener, listener.urls[0].absoluteString)
        } catch {
            await listener.stop()
            throw error
        }
        await listener.stop()
        #expect(listener.tlsIdentity == nil)
    }

    private func get(_ url: String, _ tls: HTTPClientTLS?) async throws -> HTTPClientResponse {
        try await HTTPClient(tls: tls).data(for: HTTPClientRequest(method: "GET", url: url))
    }

    /// The `.tls` error a request fails with, or nil (and an issue) when it does not.
    private func tlsFailure(_ url: String, _ tls: HTTPClientTLS?, sourceLocation: SourceLocation = #_sourceLocation) async -> String? {
        do {
            let response = try await get(url, tls)
            Issue.record("expected a TLS failure, got HTTP \(response.status)", sourceLocation: sourceLocation)
        } catch let error as CouchetteError {
            #expect(error.code == .tls, "\(error)", sourceLocation: sourceLocation)
            return error.message
        } catch {
            Issue.record("expected CouchetteError(.tls), got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    @Test func defaultsToHTTPSWithAnAnonymousIdentityThatCanBePinned() async throws {
        try await withDatabase("db") { db, _ in
            try await withTLSListener(db) { listener, url in
                #expect(url.hasPrefix("https://127.0.0.1:"))
                let identity = try #require(listener.tlsIdentity)
                #expect(identity.expiration > Date())
                let answer = try await get(url, HTTPClientTLS(pinnedCertificate: identity.certificates[0]))
                #expect(answer.status == 200)
                #expect(String(decoding: answer.body, as: UTF8.self).contains(#""db_name":"db""#))
                // The self-signed-only mode accepts it too; the anonymous identity names 127.0.0.1,
                // so trusting it as a root (host name checked) works as well.
                #expect(try await get(url, HTTPClientTLS(acceptOnlySelfSigned: true)).status == 200)
                #expect(try await get(url, HTTPClientTLS(trustedRoots: [identity.certificates[0]])).status == 200)
                // Plain HTTP to the TLS port gets no answer.
                let plain = url.replacingOccurrences(of: "https://", with: "http://")
                await #expect(throws: CouchetteError.self) { _ = try await get(plain, nil) }
            }
            // disableTLS: plain HTTP and no identity.
            try await withListener([try db.defaultCollection()]) { listener, base in
                #expect(listener.tlsIdentity == nil && listener.urls[0].scheme == "http")
                let answer = try await httpRequest("GET", base + "/db")
                #expect(answer.status == 200)
            }
        }
    }

    @Test func wrongPinUntrustedAndExpiredCertificatesAreRefused() async throws {
        try await withDatabase("db") { db, _ in
            try await withTLSListener(db) { listener, url in
                let stranger = try TLSIdentity.createIdentity(commonName: "127.0.0.1")
                let wrongPin = await tlsFailure(url, HTTPClientTLS(pinnedCertificate: stranger.certificates[0]))
                #expect(wrongPin?.contains("wrong pin") == true, "\(wrongPin ?? "")")
                #expect(wrongPin?.contains(listener.tlsIdentity!.sha256Fingerprint) == true)
                // The system trust store does not know a self-signed certificate.
                let untrusted = await tlsFailure(url, nil)
                #expect(untrusted?.contains("untrusted") == true, "\(untrusted ?? "")")
                let otherRoot = await tlsFailure(url, HTTPClientTLS(trustedRoots: [stranger.certificates[0]]))
                #expect(otherRoot?.contains("untrusted") == true, "\(otherRoot ?? "")")
                // A pinned connection is never reused for a request with another pin.
                #expect(try await get(url, HTTPClientTLS(pinnedCertificate: listener.tlsIdentity!.certificates[0])).status == 200)
            }
            let expired = try TLSIdentity.createIdentity(commonName: "127.0.0.1", expiration: Date().addingTimeInterval(-3600))
            try await withTLSListener(db, configure: { $0.tlsIdentity = expired }) { listener, url in
                #expect(listener.tlsIdentity?.sha256Fingerprint == expired.sha256Fingerprint)
                for tls in [
                    HTTPClientTLS(pinnedCertificate: expired.certificates[0]), HTTPClientTLS(acceptOnlySelfSigned: true),
                    HTTPClientTLS(trustedRoots: [expired.certificates[0]]),
                ] {
                    let message = await tlsFailure(url, tls)
                    #expect(message?.contains("expired") == true, "\(message ?? "")")
                }
            }
        }
    }

    @Test func acceptOnlySelfSignedRefusesACertificateIssuedByAnother() async throws {
        // A CA and a server certificate it issued, made with the openssl tool.
        let directory = try TemporaryDirectory()
        let path = { (name: String) in directory.path + "/" + name }
        _ = try await runCommand(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=Test CA",
            ])
        _ = try await runCommand(
            "/usr/bin/openssl",
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=127.0.0.1",
            ])
        try Data("subjectAltName=IP:127.0.0.1\n".utf8).write(to: URL(fileURLWithPath: path("ext.cnf")))
        _ = try await runCommand(
            "/usr/bin/openssl",
            [
                "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                "-CAcreateserial", "-out", path("server.pem"), "-days", "2", "-extfile", path("ext.cnf"),
            ])
        let ca = try TLSIdentity.identity(
            certificatePEM: Data(contentsOf: URL(fileURLWithPath: path("ca.pem"))),
            privateKeyPEM: Data(contentsOf: URL(fileURLWithPath: path("ca.key"))))
        let server = try TLSIdentity.identity(
            certificatePEM: Data(contentsOf: URL(fileURLWithPath: path("server.pem"))),
            privateKeyPEM: Data(contentsOf: URL(fileURLWithPath: path("server.key"))))
        try await withDatabase("db") { db, _ in
            try await withTLSListener(db, configure: { $0.tlsIdentity = server }) { _, url in
                let message = await tlsFailure(url, HTTPClientTLS(acceptOnlySelfSigned: true))
                #expect(message?.contains("not self-signed") == true, "\(message ?? "")")
                // Trusting the CA that issued it works, host name included.
                let byRoot = try await get(url, HTTPClientTLS(trustedRoots: [ca.certificates[0]]))
                let byPin = try await get(url, HTTPClientTLS(pinnedCertificate: server.certificates[0]))
                #expect(byRoot.status == 200 && byPin.status == 200)
            }
        }
    }

    @Test func clientCertificatesAreCheckedAgainstTheListenersRoots() async throws {
        let client = try TLSIdentity.createIdentity(commonName: "phone")
        let stranger = try TLSIdentity.createIdentity(commonName: "intruder")
        try await withDatabase("db") { db, _ in
            try await withTLSListener(
                db,
                configure: {
                    $0.authenticator = ListenerCertificateAuthenticator(rootCertificates: [client.certificates[0]])
                }
            ) { listener, url in
                let pin = listener.tlsIdentity!.certificates[0]
                var accepted = HTTPClientTLS(pinnedCertificate: pin)
                accepted.clientCertificatePEM = client.certificatePEM
                accepted.clientKeyPEM = client.privateKeyPEM
                let answer = try await get(url, accepted)
                #expect(answer.status == 200)

                let none = await tlsFailure(url, HTTPClientTLS(pinnedCertificate: pin))
                #expect(none?.contains("client certificate refused") == true, "\(none ?? "")")
                var refused = HTTPClientTLS(pinnedCertificate: pin)
                refused.clientCertificatePEM = stranger.certificatePEM
                refused.clientKeyPEM = stranger.privateKeyPEM
                let wrong = await tlsFailure(url, refused)
                #expect(wrong?.contains("client certificate refused") == true, "\(wrong ?? "")")
            }
            // A certificate authenticator without TLS, or without roots, cannot start.
            let collection = try db.defaultCollection()
            var plain = URLEndpointListenerConfiguration(collections: [collection])
            plain.disableTLS = true
            plain.authenticator = ListenerCertificateAuthenticator(rootCertificates: [client.certificates[0]])
            await expectCouchetteError(.invalidParameter) { try await URLEndpointListener(config: plain).start() }
            var empty = URLEndpointListenerConfiguration(collections: [collection])
            empty.authenticator = ListenerCertificateAuthenticator(rootCertificates: [])
            await expectCouchetteError(.invalidParameter) { try await URLEndpointListener(config: empty).start() }
        }
    }
}
