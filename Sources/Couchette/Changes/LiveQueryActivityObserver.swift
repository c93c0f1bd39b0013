/// Told what the shared live queries of a database do after commits: each evaluation, and each
/// re-run skipped because the changed documents could not affect the results (see
/// ``LiveQuery``). Registered with ``LiveQueryRegistry/add(activityObserver:)``.
///
/// Calls come from the evaluating task (a child of ``ObservationTasks``, never the writer
/// thread), one live query at a time in order, different live queries concurrently; an observer
/// must only note the event and return.
protocol LiveQueryActivityObserver: Sendable {
    /// The live query for `text` ran its plan: its first evaluation, a re-run after commits, or
    /// one for a subscriber still waiting for its first event. `incrementally`: it re-read only
    /// the documents the commits changed and ran the rest of the plan over the matching documents
    /// it kept (``MatchedDocuments``).
    func liveQueryEvaluated(_ text: String, incrementally: Bool)
    /// The live query for `text` did not re-run after commits: none of the changed documents
    /// passed WHERE at the last evaluation, and none passes it now.
    func liveQuerySkippedEvaluation(_ text: String)
}
