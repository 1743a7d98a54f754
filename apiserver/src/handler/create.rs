//! Create (POST to a collection).

use http::{Response, StatusCode};

use super::request::ResourceRequest;
use super::response::{Body, json_response};
use crate::ApiServer;
use crate::error::ApiResult;

impl ApiServer {
    /// POST of a new object: 201 with the stored object.
    pub(super) fn serve_create(&self, req: &ResourceRequest<'_>) -> ApiResult<Response<Body>> {
        let obj = req.decoded_body()?;
        let created = self.store.lock().unwrap_or_else(|e| e.into_inner()).create(
            &req.rt,
            req.namespace(),
            obj,
            req.query.write(),
        )?;
        Ok(json_response(StatusCode::CREATED, &*created))
    }
}
