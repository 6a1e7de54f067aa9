/// A map that remembers at most `capacity` keys, in the order they were first set: setting a new key past the
/// capacity forgets the oldest (a ring of keys beside the dictionary). Setting a key it holds changes its value,
/// not its place. Bounds what a connection remembers for a soak (socketio ack ids, graphql-ws ended operations).
struct RecentKeys<Key: Hashable, Value> {
    let capacity: Int
    private var values: [Key: Value] = [:]
    /// The keys, oldest at `head` once the ring is full.
    private var order: [Key] = []
    private var head = 0

    init(capacity: Int) {
        precondition(capacity > 0, "a window of no keys")
        self.capacity = capacity
    }

    /// Keys remembered (at most `capacity`).
    var count: Int { values.count }

    subscript(key: Key) -> Value? { values[key] }

    /// Sets `key`'s value; a key not held is remembered, forgetting the oldest past the capacity.
    mutating func set(_ value: Value, for key: Key) {
        if values.updateValue(value, forKey: key) != nil { return }
        if order.count < capacity {
            order.append(key)
        } else {
            values[order[head]] = nil
            order[head] = key
            head = (head + 1) % capacity
        }
    }
}
