import Foundation

/// How a ``URLEndpointListener`` decides who may connect: ``ListenerPasswordAuthenticator`` or
/// ``ListenerCertificateAuthenticator``.
///
/// ```swift
/// config.authenticator = ListenerPasswordAuthenticator { user, password in
///     user == "alice" && password == "secret"
/// }
/// ```
public protocol ListenerAuthenticator: Sendable {}
