import Foundation

/// The listener's `AuthSession` cookies: random tokens kept server-side with the user they
/// log in and an idle expiry.
///
/// A token is 32 bytes from the system's cryptographic generator (`getrandom` on Linux), so
/// it cannot be guessed or forged, and it means nothing without this store: `DELETE /_session`
/// really ends a session (CouchDB's signed cookies stay valid until they expire). Each accepted
/// use moves the expiry `lifetime` ahead, so a replicator that keeps working keeps its session,
/// where CouchDB would re-issue the cookie. Tokens never appear in errors or logs.
final class SessionStore: Sendable {
    private struct Session {
        let user: String
        var expires: ContinuousClock.Instant
    }

    static let capacity = 10_000
    let lifetime: Duration
    private let sessions = Locked<[String: Session]>([:])

    init(lifetime: Duration) {
        self.lifetime = lifetime
    }

    /// A new session for `user`; returns its token (43 URL-safe base64 characters).
    func open(user: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let token = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let now = ContinuousClock.now
        sessions.withLock { sessions in
            // Repeated logins cannot grow the store without bound: when full, expired sessions
            // go, and if none had expired, the stalest one.
            if sessions.count >= Self.capacity {
                sessions = sessions.filter { $0.value.expires > now }
                if sessions.count >= Self.capacity, let stalest = sessions.min(by: { $0.value.expires < $1.value.expires }) {
                    sessions.removeValue(forKey: stalest.key)
                }
            }
            sessions[token] = Session(user: user, expires: now + lifetime)
        }
        return token
    }

    /// The user a live session belongs to, extending it; nil for an unknown or expired token.
    func user(for token: String) -> String? {
        let now = ContinuousClock.now
        return sessions.withLock { sessions in
            guard var session = sessions[token] else { return nil }
            guard session.expires > now else {
                sessions.removeValue(forKey: token)
                return nil
            }
            session.expires = now + lifetime
            sessions[token] = session
            return session.user
        }
    }

    func close(_ token: String) {
        _ = sessions.withLock { $0.removeValue(forKey: token) }
    }
}
