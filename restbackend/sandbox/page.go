package sandbox

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func (g *Gateway) handlePage(c echo.Context) error {
	return c.String(http.StatusNotImplemented, "todo")
}
func (g *Gateway) handleEmbedJS(c echo.Context) error {
	return c.String(http.StatusNotImplemented, "todo")
}
func (g *Gateway) handleImage(c echo.Context) error {
	return c.String(http.StatusNotImplemented, "todo")
}
func (g *Gateway) handleStatement(c echo.Context) error {
	return c.String(http.StatusNotImplemented, "todo")
}
