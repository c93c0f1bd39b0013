import Observation

/// A live query's results decoded as models, as an `@Observable` object on the main actor: the
/// Observation-framework counterpart of ``Query/changes()``, ready for a SwiftUI view or any
/// view model.
///
/// It subscribes when created (so no commit after `init` is missed), decodes every
/// ``QueryChange`` on the main actor (so `Element` may be a class model that is not `Sendable`)
/// and updates ``elements``; it stops observing when it is released or the database closes.
///
/// ```swift
/// @MainActor @Observable
/// final class TodoViewModel {
///     let todos: ObservableQuery<TodoTask>
///     init(db: Database) throws {
///         todos = ObservableQuery(try db.createQuery("SELECT meta().id AS id, title, completed FROM tasks"),
///                                 as: TodoTask.self)
///     }
/// }
/// // In a view: ForEach(viewModel.todos.elements, id: \.id) { … }
/// ```
///
/// When a change carries an error (the query failed, or a row could not be decoded as
/// `Element`), ``error`` is set and ``elements`` keeps its previous value; the next successful
/// change clears ``error``. `elements` is empty until the initial results arrive.
@MainActor @Observable
public final class ObservableQuery<Element: Decodable> {
    /// The current results, decoded; empty until the first results arrive.
    public private(set) var elements: [Element] = []
    /// The error of the latest change, or nil when it succeeded.
    public private(set) var error: (any Error)?

    /// The live query being followed.
    @ObservationIgnored public let query: Query
    @ObservationIgnored private let dataKey: String?
    @ObservationIgnored private nonisolated let subscription = Subscription()

    /// Starts following `query`; its results are decoded as `type` with ``ResultSet/data(as:dataKey:)``.
    ///
    /// - Parameters:
    ///   - query: The query to follow. Its ``Query/parameters`` may be changed later: the results
    ///     follow.
    ///   - type: The model each row is decoded as.
    ///   - dataKey: The dictionary column models are decoded from (for `SELECT *` queries),
    ///     as in ``QueryResult/data(as:dataKey:)``.
    public init(_ query: Query, as type: Element.Type, dataKey: String? = nil) {
        self.query = query
        self.dataKey = dataKey
        let changes = query.changes()
        subscription.start(
            Task { [weak self] in
                for await change in changes {
                    guard let self else { return }
                    self.apply(change)
                }
            })
    }

    private func apply(_ change: QueryChange) {
        if let error = change.error {
            self.error = error
            return
        }
        do {
            elements = try change.results?.data(as: Element.self, dataKey: dataKey) ?? []
            if error != nil { error = nil }
        } catch {
            self.error = error
        }
    }

    /// Owns the iterating task and cancels it when the ``ObservableQuery`` is released;
    /// cancellation ends the stream, which unregisters the live query.
    private final class Subscription: Sendable {
        private let task = Locked<Task<Void, Never>?>(nil)

        func start(_ task: Task<Void, Never>) { self.task.withLock { $0 = task } }

        deinit { task.withLock { $0?.cancel() } }
    }
}
