import Foundation

/// How a ``URLEndpointListener`` decides who may connect: ``ListenerPasswordAuthenticator`` or
/// ``ListenerCertificateAuthenticator``.
public protocol ListenerAuthenticator: Sendable {}
