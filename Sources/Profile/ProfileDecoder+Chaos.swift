import JSON
import WebSocket

/// The chaos timeline.
extension ProfileReader {
    /// The `chaos` timeline: faults applied to the embedded server at moments of the run.
    mutating func chaos(_ value: JSONValue?, target: Profile.Target?, duration: Duration?) -> [ChaosEvent] {
        guard let list = array(value, "chaos") else { return [] }
        if target != nil && target != .embedded {
            if let option = overrides.target {
                problem("chaos", "a chaos timeline acts on the embedded server, not on --target \(option)",
                        hint: "leave --target out, or give --target embedded")
            } else {
                problem("chaos", "a chaos timeline acts on the embedded server", hint: "set \"target\": \"embedded\"")
            }
        }
        var events: [ChaosEvent] = []
        for (index, element) in list.enumerated() {
            let path = "chaos[\(index)]"
            guard let object = object(element, path, kind: "chaos") else { continue }
            let at = required(object, "at", path).flatMap { self.duration($0, Self.join(path, "at")) }
            if let at, let duration, at >= duration {
                let limit = formatDuration(duration) + (overrides.duration != nil ? ", set by --duration" : "")
                problem(Self.join(path, "at"), "\(formatDuration(at)) is not within the run's duration (\(limit))",
                        hint: overrides.duration != nil ? "give a --duration above \(formatDuration(at)), or leave it out" : nil)
            }
            let fraction = number(object["fraction"], Self.join(path, "fraction"), minimum: 0, maximum: 1) ?? 1
            let pause = self.duration(object["for"], Self.join(path, "for"), minimum: .milliseconds(1))
            guard let actionName = required(object, "action", path, hint: "kill, reset, close, stall or restart").flatMap({
                string($0, Self.join(path, "action"))
            }) else { continue }
            let action: ServerChaosAction?
            switch actionName {
            case "kill":
                action = .kill(fraction: fraction)
            case "reset":
                action = .reset(fraction: fraction)
            case "close":
                let code = integer(object["code"], Self.join(path, "code"), in: 1000...4999) ?? 1001
                let closeCode = WebSocketCloseCode(rawValue: UInt16(code))
                if !closeCode.isValidOnWire { problem(Self.join(path, "code"), "\(code) may not be sent in a close frame") }
                action = .close(code: closeCode, fraction: fraction)
            case "stall":
                if pause == nil && object["for"] == nil { problem(Self.join(path, "for"), "is required for stall", hint: "e.g. \"5s\"") }
                action = pause.map { .stall(duration: $0, fraction: fraction) }
            case "restart":
                if pause == nil && object["for"] == nil { problem(Self.join(path, "for"), "is required for restart", hint: "e.g. \"2s\"") }
                if object["fraction"] != nil { problem(Self.join(path, "fraction"), "a restart drops every connection") }
                action = pause.map { .restart(downFor: $0) }
            default:
                problem(Self.join(path, "action"), "\"\(actionName)\" is not kill, reset, close, stall or restart",
                        hint: suggestion(for: actionName, among: ["kill", "reset", "close", "stall", "restart"]))
                action = nil
            }
            if actionName != "close" && object["code"] != nil { problem(Self.join(path, "code"), "only close sends a code") }
            if actionName != "stall" && actionName != "restart" && object["for"] != nil {
                problem(Self.join(path, "for"), "only stall and restart last")
            }
            if let at, let action { events.append(ChaosEvent(at: at, action: action)) }
        }
        return events.sorted { $0.at < $1.at }
    }
}
