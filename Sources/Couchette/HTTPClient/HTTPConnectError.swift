/// ``HTTPClient``'s failure to reach a server at all: the name did not resolve, or no connection
/// could be opened in time. Nothing was sent, so the request may be retried as it is, and a
/// caller waiting for the server to come back can probe it cheaply (see
/// ``RemotePeer/awaitRetry(within:)``). Every other transport failure is a `CouchetteError(.io)`.
struct HTTPConnectError: Error, Sendable, CustomStringConvertible {
    let message: String

    var description: String { message }

    /// The same failure as the `.io` error replication reports.
    var couchetteError: CouchetteError { CouchetteError(.io, message) }
}
