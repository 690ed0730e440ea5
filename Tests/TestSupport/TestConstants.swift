/// Values shared by tests.
public enum TestConstants {
    /// The Storage bucket tests configure.
    public static let bucket = "test-bucket"
    /// The Firebase project id tests configure.
    public static let projectID = "locify-test"
}
