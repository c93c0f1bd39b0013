/// An asynchronous sequence of change events: what ``Collection/changes()``,
/// ``Collection/documentChanges(for:)`` and ``Query/changes()`` return.
///
/// Iterate it with `for await`. It never throws and never ends on its own while the database is
/// open; it ends when ``Database/close()`` is called (after the events committed before the close
/// are delivered).
///
/// ```swift
/// let changes = tasks.changes()          // registered now: no later commit is missed
/// Task {
///     for await change in changes {
///         print("\(change.collection.name): \(change.documentIDs)")
///     }
/// }
/// ```
///
/// Events arrive in commit order, and below 64 undelivered events each commit is its own event.
/// A consumer that falls further behind gets later events merged (collection and document feeds:
/// one event with the union of the ids; live queries: only the newest results), so memory stays
/// bounded without losing a change.
///
/// The observer is registered when the stream is created and released when the iteration ends:
/// `break`, cancellation of the iterating task, or dropping the stream (and its iterator)
/// unregisters it. A stream is meant for one consumer; iterating it after breaking out of a
/// `for await` loop yields nothing. Create one stream per consumer.
public struct ChangeStream<Element: Sendable>: AsyncSequence, Sendable {
    /// Change streams never throw: failures of a live query arrive inside its events
    /// (``QueryChange/error``).
    public typealias Failure = Never

    let buffer: ChangeBuffer<Element>
    private let lifetime: Lifetime

    init(buffer: ChangeBuffer<Element>) {
        self.buffer = buffer
        lifetime = Lifetime(buffer: buffer)
    }

    /// A stream that has already ended (for example because the database is closed).
    static func finished() -> ChangeStream {
        let buffer = ChangeBuffer<Element> { _, _ in }
        buffer.finish()
        return ChangeStream(buffer: buffer)
    }

    /// The iterator that `for await` uses. Make one per stream: the stream's events go to whichever
    /// iterator asks first.
    public func makeAsyncIterator() -> Iterator {
        Iterator(buffer: buffer, lifetime: lifetime)
    }

    /// Iterates a ``ChangeStream``; ending the iteration (dropping the iterator) ends the stream.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        /// Iteration never throws.
        public typealias Failure = Never

        private let buffer: ChangeBuffer<Element>
        private let lifetime: Lifetime
        private let iteration: Lifetime

        init(buffer: ChangeBuffer<Element>, lifetime: Lifetime) {
            self.buffer = buffer
            self.lifetime = lifetime
            iteration = Lifetime(buffer: buffer)
        }

        /// The next event, or nil when the stream has ended or the task is cancelled.
        public mutating func next() async -> Element? {
            await buffer.next()
        }

        /// The next event, or nil when the stream has ended or the task is cancelled.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            await buffer.next()
        }
    }

    /// Terminates the buffer when the last copy of its owner (the stream, or one iteration) goes away.
    final class Lifetime: Sendable {
        private let buffer: ChangeBuffer<Element>
        init(buffer: ChangeBuffer<Element>) { self.buffer = buffer }
        deinit { buffer.terminate() }
    }
}
