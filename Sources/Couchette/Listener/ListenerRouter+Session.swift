import Foundation

/// Who a request speaks for, and CouchDB's cookie authentication (`/_session`).
///
/// With an authenticator, a request is accepted when it carries valid HTTP Basic credentials or
/// a live `AuthSession` cookie from `POST /_session` (see ``SessionStore``). A cookie the store
/// does not know (forged, expired, logged out) gets `401` even where Basic credentials would not
/// be needed, so a client learns that it must log in again.
extension ListenerRouter {
    enum Credentials {
        case anonymous
        case user(String, method: String)
        case wrongPassword
        case invalidSession
    }

    static let sessionCookie = "AuthSession"

    /// The session token: CouchDB's `AuthSession` cookie, or `SyncGatewaySession`, the name a
    /// ``SessionAuthenticator`` sends by default (Couchbase Lite's convention).
    static func sessionToken(in request: HTTPRequest) -> String? {
        cookie(sessionCookie, in: request) ?? cookie("SyncGatewaySession", in: request)
    }

    static var invalidSession: HTTPResponse {
        .error(401, "unauthorized", "The AuthSession cookie is invalid or has expired; log in again with POST /_session.")
    }

    func credentials(_ request: HTTPRequest, _ authenticator: ListenerPasswordAuthenticator) -> Credentials {
        if let header = request.header("authorization") {
            guard let (user, password) = ListenerRouter.basicCredentials(header), authenticator.authenticate(user, password) else {
                return .wrongPassword
            }
            return .user(user, method: "default")
        }
        guard let token = ListenerRouter.sessionToken(in: request) else { return .anonymous }
        guard let user = sessions.user(for: token) else { return .invalidSession }
        return .user(user, method: "cookie")
    }

    /// `POST /_session` logs in (JSON or form-encoded `name` and `password`) and sets the cookie;
    /// `GET` describes the current user (`userCtx`); `DELETE` ends the session and clears the cookie.
    func session(_ request: HTTPRequest, _ authenticator: ListenerPasswordAuthenticator?) -> HTTPResponse {
        switch request.method {
        case "POST":
            return logIn(request, authenticator)
        case "DELETE":
            if let token = ListenerRouter.sessionToken(in: request) { sessions.close(token) }
            var response = HTTPResponse.json(.dictionary(["ok": .bool(true)]))
            response.headers.append(("Set-Cookie", "\(ListenerRouter.sessionCookie)=; Path=/; HttpOnly; Max-Age=0"))
            return response
        case "GET", "HEAD":
            var user: Value = .null
            var method = "default"
            if let authenticator {
                switch credentials(request, authenticator) {
                case .anonymous: break
                case .user(let name, let how): (user, method) = (.string(name), how)
                case .wrongPassword: return .error(401, "unauthorized", "Name or password is incorrect.")
                case .invalidSession: return ListenerRouter.invalidSession
                }
            }
            return .json(
                .dictionary([
                    "ok": .bool(true),
                    "userCtx": .dictionary(["name": user, "roles": .array([])]),
                    "info": .dictionary([
                        "authenticated": .string(method),
                        "authentication_handlers": .array([.string("cookie"), .string("default")]),
                    ]),
                ]))
        default:
            return ListenerError.methodNotAllowed("only DELETE,GET,HEAD,POST allowed for /_session").response
        }
    }

    private func logIn(_ request: HTTPRequest, _ authenticator: ListenerPasswordAuthenticator?) -> HTTPResponse {
        let fields: [String: String]
        if request.header("content-type")?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true {
            fields = HTTPRequest.parseQuery(String(decoding: request.body, as: UTF8.self))
        } else {
            guard let json = try? ListenerRouter.jsonBody(request), case .dictionary(let object) = json else {
                return .error(400, "bad_request", "POST /_session expects {\"name\": …, \"password\": …} as JSON or a form")
            }
            fields = object.compactMapValues { if case .string(let text) = $0 { text } else { nil } }
        }
        guard let name = fields["name"], let password = fields["password"] else {
            return .error(400, "bad_request", "POST /_session needs both name and password")
        }
        // Without an authenticator the listener has no users to log in (every request is accepted anyway).
        guard let authenticator, authenticator.authenticate(name, password) else {
            return .error(401, "unauthorized", "Name or password is incorrect.")
        }
        let token = sessions.open(user: name)
        var response = HTTPResponse.json(.dictionary(["ok": .bool(true), "name": .string(name), "roles": .array([])]))
        response.headers.append(("Set-Cookie", "\(ListenerRouter.sessionCookie)=\(token); Path=/; HttpOnly"))
        return response
    }

    /// `Authorization: Basic base64(user:password)`, decoded.
    static func basicCredentials(_ header: String) -> (user: String, password: String)? {
        guard header.lowercased().hasPrefix("basic "),
            let decoded = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
            let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    /// The value of cookie `name` in the request's `Cookie` header; nil when absent or empty.
    static func cookie(_ name: String, in request: HTTPRequest) -> String? {
        guard let header = request.header("cookie") else { return nil }
        for pair in header.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                let value = parts[1].trimmingCharacters(in: .whitespaces)
                return value.isEmpty ? nil : value  // a cleared cookie (`AuthSession=`) is no session
            }
        }
        return nil
    }
}
