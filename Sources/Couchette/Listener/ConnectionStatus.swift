import Foundation

/// A ``URLEndpointListener``'s connections: open ones, and those busy with a request.
///
/// ```swift
/// let status = listener.status
/// print("\(status.activeConnectionCount) of \(status.connectionCount) connections busy")
/// ```
public struct ConnectionStatus: Sendable, Equatable {
    /// Open TCP connections (idle keep-alive connections included).
    public let connectionCount: Int
    /// Connections whose request is being answered (an open `_changes` feed counts).
    public let activeConnectionCount: Int
}
