import Foundation
import Testing

@testable import Couchette

/// CouchDB's cookie authentication on the listener (`POST|GET|DELETE /_session`, the
/// `AuthSession` cookie) and a ``Replicator`` using it through ``SessionAuthenticator``.
@Suite(.serialized, .tags(.concurrency, .sanitizeAddress)) struct SessionAuthenticationTests {
    private static func requireAlice(_ config: inout URLEndpointListenerConfiguration) {
        config.authenticator = ListenerPasswordAuthenticator { user, password in user == "alice" && password == "s3cret" }
    }

    /// `httpRequest` with the given `Cookie` and Basic credentials: the client keeps no cookies
    /// of its own, so each request carries exactly the `Cookie` header the test gives it.
    private func send(
        _ method: String, _ url: String, body: String? = nil, contentType: String = "application/json",
        cookie: String? = nil, basic: String? = nil
    ) async throws -> HTTPReply {
        var headers: [String: String] = [:]
        if let cookie { headers["Cookie"] = cookie }
        if let basic { headers["Authorization"] = "Basic " + Data(basic.utf8).base64EncodedString() }
        if body != nil { headers["Content-Type"] = contentType }
        return try await httpRequest(method, url, body: body, headers: headers)
    }

    /// Logs in and returns the `AuthSession` token from `Set-Cookie`.
    private func logIn(_ base: String) async throws -> String {
        let reply = try await send("POST", base + "/_session", body: #"{"name":"alice","password":"s3cret"}"#)
        #expect(reply.status == 200, "\(reply.text)")
        let cookie = try #require(reply.headers["set-cookie"])
        let match = try #require(cookie.firstMatch(of: /^AuthSession=([A-Za-z0-9_-]+); Path=\/; HttpOnly$/))
        return String(match.1)
    }

    @Test func logInUseAndLogOut() async throws {
        try await withDatabase("db") { db, _ in
            try await withListener([try db.defaultCollection()], configure: Self.requireAlice) { _, base in
                let wrong = try await send("POST", base + "/_session", body: #"{"name":"alice","password":"nope"}"#)
                #expect(wrong.status == 401 && wrong.json?["error"] == .string("unauthorized") && wrong.headers["set-cookie"] == nil)

                let json = try await send("POST", base + "/_session", body: #"{"name":"alice","password":"s3cret"}"#)
                #expect(json.json == .dictionary(["ok": .bool(true), "name": .string("alice"), "roles": .array([])]))
                let token = try await logIn(base)
                #expect(token.count == 43)
                let form = try await send(
                    "POST", base + "/_session", body: "name=alice&password=s3cret",
                    contentType: "application/x-www-form-urlencoded")
                #expect(form.status == 200 && form.json?["name"] == .string("alice"))
                #expect(try await logIn(base) != token)

                #expect(try await send("GET", base + "/db").status == 401)
                #expect(try await send("GET", base + "/db", cookie: "AuthSession=\(token)").status == 200)
                #expect(try await send("PUT", base + "/db/doc", body: "{}", cookie: "other=1; AuthSession=\(token)").status == 201)
                #expect(try await send("GET", base + "/db", cookie: "SyncGatewaySession=\(token)").status == 200)

                let me = try await send("GET", base + "/_session", cookie: "AuthSession=\(token)")
                #expect(me.json?["ok"] == .bool(true) && me.json?["userCtx"]?["name"] == .string("alice"))
                #expect(me.json?["userCtx"]?["roles"] == .array([]) && me.json?["info"]?["authenticated"] == .string("cookie"))
                let basic = try await send("GET", base + "/_session", basic: "alice:s3cret")
                #expect(basic.json?["userCtx"]?["name"] == .string("alice") && basic.json?["info"]?["authenticated"] == .string("default"))
                #expect(try await send("GET", base + "/_session").json?["userCtx"]?["name"] == .null)
                #expect(try await send("GET", base + "/_session", basic: "alice:nope").status == 401)

                let forged = try await send("GET", base + "/db", cookie: "AuthSession=" + String(token.reversed()))
                #expect(forged.status == 401 && forged.json?["error"] == .string("unauthorized"))
                #expect(forged.json?["reason"].map { "\($0)" }?.contains("AuthSession") == true)

                let out = try await send("DELETE", base + "/_session", cookie: "AuthSession=\(token)")
                #expect(out.status == 200 && out.json?["ok"] == .bool(true))
                #expect(out.headers["set-cookie"]?.hasPrefix("AuthSession=;") == true)
                #expect(try await send("GET", base + "/db", cookie: "AuthSession=\(token)").status == 401)

                #expect(try await send("POST", base + "/_session", body: #"{"name":"alice"}"#).status == 400)
                #expect(try await send("POST", base + "/_session", body: "{oops").status == 400)
                #expect(try await send("PUT", base + "/_session", body: "{}").status == 405)
            }
        }
    }

    @Test func sessionsExpire() async throws {
        try await withDatabase("db") { db, _ in
            try await withListener(
                [try db.defaultCollection()],
                configure: {
                    Self.requireAlice(&$0)
                    $0.sessionLifetime = .milliseconds(300)
                }
            ) { _, base in
                let token = try await logIn(base)
                try await Task.sleep(for: .milliseconds(800))
                let expired = try await send("GET", base + "/db", cookie: "AuthSession=\(token)")
                #expect(expired.status == 401 && expired.json?["error"] == .string("unauthorized"))
            }
        }
    }

    @Test func tokensAreRandomAndServerSide() {
        let store = SessionStore(lifetime: .seconds(60))
        let tokens = (0..<200).map { _ in store.open(user: "u") }
        #expect(Set(tokens).count == 200)
        #expect(tokens.allSatisfy { $0.count == 43 && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" } })
        #expect(store.user(for: tokens[0]) == "u")
        store.close(tokens[0])
        #expect(store.user(for: tokens[0]) == nil)
        #expect(store.user(for: "u") == nil)
        // At capacity, a new login pushes out the stalest session, never a fresher one.
        let full = SessionStore(lifetime: .seconds(60))
        let first = full.open(user: "first")
        for _ in 1..<SessionStore.capacity { _ = full.open(user: "other") }
        let newest = full.open(user: "newest")
        #expect(full.user(for: first) == nil && full.user(for: newest) == "newest")
    }

    @Test func aNoAuthenticatorListenerHasNoUsersToLogIn() async throws {
        try await withDatabase("db") { db, _ in
            try await withListener([try db.defaultCollection()]) { _, base in
                let login = try await send("POST", base + "/_session", body: #"{"name":"a","password":"b"}"#)
                #expect(login.status == 401)
                #expect(try await send("GET", base + "/_session").json?["userCtx"]?["name"] == .null)
                #expect(try await send("GET", base + "/db").status == 200)
            }
        }
    }

    @Test func aReplicatorWithASessionCookieReplicatesAndABadOneStops() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(5, prefix: "s", in: try local.defaultCollection())
            try await withListener([try remote.defaultCollection()], configure: Self.requireAlice) { listener, base in
                let token = try await logIn(base)
                func config(_ authenticator: SessionAuthenticator) throws -> ReplicatorConfiguration {
                    var config = ReplicatorConfiguration(target: URLEndpoint(url: listener.urls[0]))
                    config.addCollection(try local.defaultCollection())
                    config.replicatorType = .push
                    config.authenticator = authenticator
                    return config
                }
                let good = try #require(
                    await runToCompletion(try Replicator(config: config(SessionAuthenticator(sessionID: token, cookieName: "AuthSession"))))
                        .last)
                #expect(good.error == nil, "\(String(describing: good.error))")
                #expect(good.activity == .stopped && good.progress.completed == 5)
                #expect(try await remote.defaultCollection().count == 5)

                let bogus = String(repeating: "A", count: 43)
                let refused = try #require(
                    await runToCompletion(try Replicator(config: config(SessionAuthenticator(sessionID: bogus, cookieName: "AuthSession"))))
                        .last)
                let error = try #require(refused.error as? CouchetteError)
                #expect(error.code == .unauthorized && refused.activity == .stopped)
                #expect(error.message.contains("401") && error.message.contains("AuthSession"), "\(error.message)")
                #expect(!error.message.contains(bogus))
            }
        }
    }

    @Test func logInGetsASessionTheReplicatorUses() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(3, prefix: "l", in: try local.defaultCollection())
            try await withListener([try remote.defaultCollection()], configure: Self.requireAlice) { listener, base in
                let dead = try DeadPort()
                // The first server is down: the login goes to the next, as replication would.
                var config = ReplicatorConfiguration(
                    target: URLEndpoint(urls: [URL(string: "http://127.0.0.1:\(dead.port)/remote")!, listener.urls[0]]))
                config.addCollection(try local.defaultCollection())
                config.replicatorType = .push
                let session = try await SessionAuthenticator.logIn(to: config, username: "alice", password: "s3cret")
                #expect(session.cookieName == "AuthSession" && session.sessionID.count == 43)
                #expect(try await send("GET", base + "/remote", cookie: "AuthSession=\(session.sessionID)").status == 200)
                config.authenticator = session
                let last = try #require(await runToCompletion(try Replicator(config: config)).last)
                #expect(last.error == nil && last.progress.completed == 3, "\(String(describing: last.error))")

                let refused = await expectCouchetteError(.unauthorized) {
                    _ = try await SessionAuthenticator.logIn(to: config, username: "alice", password: "wrong")
                }
                #expect(refused?.contains("/_session") == true && refused?.contains("wrong") == false, "\(refused ?? "")")
                withExtendedLifetime(dead) {}
                await expectCouchetteError(.invalidParameter) {
                    _ = try await SessionAuthenticator.logIn(
                        to: ReplicatorConfiguration(target: DatabaseEndpoint(database: remote)),
                        username: "alice", password: "s3cret")
                }
            }
            // A server without cookie login (no authenticator: nobody to log in) refuses it.
            try await withListener([try remote.defaultCollection()]) { listener, _ in
                _ = await expectCouchetteError(.unauthorized) {
                    _ = try await SessionAuthenticator.logIn(
                        to: ReplicatorConfiguration(target: URLEndpoint(url: listener.urls[0])),
                        username: "a", password: "b")
                }
            }
        }
    }
}
